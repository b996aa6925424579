"""Who sees which page: anonymous visitors are sent to sign in (or may read, when the server
allows it), the header names the account and its role, and controls follow the role."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tests.accounts_support import make_account
from tests.factories import indexed_repository
from tests.frontend.signed_in import ui_client

pytestmark = pytest.mark.django_db
PAGES = ("/", "/?q=retry", "/ask/", "/repos/", "/settings/", "/tokens/", "/audit/")
READ_PAGES = ("/", "/?q=retry", "/ask/", "/repos/")
FRAGMENT = {"request": {}, "response": {"results": [], "query": "x"}}
ANSWER = {"question": "q", "error": {"code": "x", "message": "m", "details": {}}}


def post_json(client: Client, url: str, body: object) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("url", PAGES)
def test_anonymous_visitors_are_sent_to_sign_in_and_back(url: str) -> None:
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/sign-in?next=")
    follow = Client().get(response["Location"])
    assert follow.status_code == 200 and 'id="sign-in-form"' in follow.content.decode()
    assert f'name="next" value="{url.replace("&", "&amp;")}"' in follow.content.decode()


def test_the_file_view_needs_an_account_too() -> None:
    repository = indexed_repository("acme/private", ["def secret():\n    return 42"])
    response = Client().get(f"/repos/{repository.pk}/file?path=src/app.py")
    assert response.status_code == 302 and "secret" not in response.content.decode()


def test_the_html_renderers_answer_401_to_anonymous_scripts() -> None:
    for url, body in (("/ui/results", FRAGMENT), ("/ui/answer", ANSWER)):
        response = post_json(Client(), url, body)
        assert response.status_code == 401, url
        assert "Sign in" in response.content.decode()
        assert post_json(ui_client("read"), url, body).status_code == 200, url


def test_the_renderers_want_the_csrf_token_of_the_session() -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_account("read"))
    assert post_json(client, "/ui/results", FRAGMENT).status_code == 403
    token = str(client.get("/").context["csrf_token"])
    response = client.post(
        "/ui/results",
        json.dumps(FRAGMENT),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 200


@pytest.mark.parametrize("url", READ_PAGES)
def test_anonymous_read_opens_the_read_pages_only(settings: Any, url: str) -> None:
    settings.REPO_SEARCH_ANONYMOUS_READ = True
    response = Client().get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="sign-in-link"' in html and "Sign out" not in html
    assert 'id="add-form"' not in html and "data-can-write" not in html


def test_anonymous_read_never_opens_settings_or_tokens(settings: Any) -> None:
    settings.REPO_SEARCH_ANONYMOUS_READ = True
    for url in ("/settings/", "/tokens/", "/audit/"):
        assert Client().get(url).status_code == 302, url
    assert post_json(Client(), "/ui/results", FRAGMENT).status_code == 200


def test_the_header_names_the_account_its_role_and_offers_sign_out() -> None:
    user = make_account("write", username="dana")
    html = ui_client(user=user).get("/").content.decode()
    assert "<strong data-username>dana</strong>" in html
    assert 'class="badge role role-write"' in html and ">write</span>" in html
    assert 'action="/sign-out"' in html and 'method="post"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'href="/admin/"' not in html  # not staff
    assert 'href="/tokens/"' in html


@pytest.mark.parametrize(("role", "writes"), [("read", False), ("write", True), ("admin", True)])
def test_repository_write_controls_follow_the_role(role: str, writes: bool) -> None:
    html = ui_client(role).get("/repos/").content.decode()
    assert ('id="add-form"' in html) is writes
    assert ('data-can-write="1"' in html) is writes
    assert ('id="read-only"' in html) is not writes


@pytest.mark.parametrize(("role", "saves"), [("read", False), ("write", False), ("admin", True)])
def test_only_administrators_get_the_settings_save_button(role: str, saves: bool) -> None:
    html = ui_client(role).get("/settings/").content.decode()
    assert ('<button type="submit" class="primary">Save</button>' in html) is saves
    assert ("<fieldset disabled>" in html) is not saves


@pytest.mark.parametrize(
    ("role", "scopes"),
    [("read", ["read"]), ("write", ["read", "write"]), ("admin", ["read", "write", "admin"])],
)
def test_the_tokens_form_offers_scopes_up_to_the_role(role: str, scopes: list[str]) -> None:
    html = ui_client(role).get("/tokens/").content.decode()
    offered = [s for s in ("read", "write", "admin") if f'<option value="{s}"' in html]
    assert offered == scopes


def test_single_sign_on_is_offered_when_it_is_configured(settings: Any) -> None:
    assert "single sign-on" not in Client().get("/sign-in").content.decode()
    settings.REPO_SEARCH_OIDC_ENABLED = True
    html = Client().get("/sign-in?next=/repos/").content.decode()
    assert 'href="/oidc/authenticate/?next=/repos/"' in html
    assert "Sign in with single sign-on" in html
    settings.REPO_SEARCH_OIDC_PROVIDER_NAME = "Keycloak"
    assert "Sign in with Keycloak" in Client().get("/sign-in").content.decode()


def test_a_signed_in_visitor_of_the_sign_in_page_goes_on() -> None:
    response = ui_client("read").get("/sign-in?next=/ask/")
    assert response.status_code == 302 and response["Location"] == "/ask/"


def test_health_tells_a_signed_in_page_about_the_models() -> None:
    """The pages disable the LLM options from what /api/health says about the chat model."""
    assert "models" in ui_client("read").get("/api/health").json()
    assert "models" not in Client().get("/api/health").json()


@pytest.mark.parametrize(("role", "status"), [("read", 403), ("write", 403), ("admin", 200)])
def test_the_audit_page_is_for_administrators(role: str, status: int) -> None:
    client = ui_client(role)
    response = client.get("/audit/?action=token.*")
    assert response.status_code == status
    html = response.content.decode()
    assert ('href="/audit/"' in client.get("/").content.decode()) is (status == 200)
    if status == 200:
        assert 'name="action" type="text" value="token.*"' in html
    else:
        assert "for administrators" in html
