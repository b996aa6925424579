"""What a user sees for a wrong address or a server error: a friendly page (HTML) or the one
error shape (under /api/), never Django's debug pages, even with DEBUG on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.accounts_support import session_client

ROOT = Path(__file__).resolve().parents[2]
LEAKS = (b"Traceback", b"URLconf", b"DATABASE_URL", b"SECRET_KEY", b"urlpatterns", b"Django")


def assert_friendly_page(response, status: int, title: bytes) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    assert title in response.content
    for leak in LEAKS:
        assert leak not in response.content, leak


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "path", ["/repos/{id}/", "/repos/{id}/nope", "/nope/", "/repos/not-a-uuid/file"]
)
def test_unknown_pages_get_the_friendly_404_even_with_debug_on(settings, debug, path) -> None:
    settings.DEBUG = debug
    response = session_client().get(path.format(id=uuid.uuid4()))
    assert_friendly_page(response, 404, b"Not found")
    assert b"Back to search" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
def test_unknown_api_paths_are_404_in_the_error_shape(settings, debug) -> None:
    settings.DEBUG = debug
    response = session_client().get("/api/nope/x/y/z")
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "code": "not_found",
            "message": "no such endpoint: /api/nope/x/y/z",
            "details": {},
        }
    }


@pytest.mark.django_db
def test_a_missing_trailing_slash_still_redirects() -> None:
    response = session_client().get("/repos")
    assert response.status_code == 301
    assert response["Location"] == "/repos/"


@pytest.mark.django_db
def test_a_failing_page_is_the_friendly_500_without_internals(settings) -> None:
    settings.ROOT_URLCONF = "tests.reposearch.error_urls"
    client = session_client()
    client.raise_request_exception = False
    response = client.get("/boom/")
    assert_friendly_page(response, 500, b"Something went wrong")
    assert b"pw@db" not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/boom", "/api/boom-plain"])
def test_a_failing_api_call_is_a_500_in_the_error_shape(settings, path) -> None:
    settings.ROOT_URLCONF = "tests.reposearch.error_urls"
    client = session_client()
    client.raise_request_exception = False
    response = client.get(path)
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["code"] == "internal_error"
    assert "pw@db" not in json.dumps(error)


PROBE = """
import django, json
django.setup()
from django.test import Client

from tests.accounts_support import session_client
from tests.accounts_support import session_client
client = Client(HTTP_HOST="localhost")
page = client.get("/nope/00000000-0000-0000-0000-000000000000/")
api = client.get("/api/nope")
print(json.dumps({"page": [page.status_code, page.content.decode()],
                  "api": [api.status_code, api.json()]}))
"""


@pytest.mark.parametrize(
    ("module", "extra"),
    [
        ("reposearch.settings.base", {"DEBUG": "1"}),
        ("reposearch.settings.test", {}),
        (
            "reposearch.settings.production",
            {"DEBUG": "0", "SECRET_KEY": "x" * 40, "ALLOWED_HOSTS": "localhost"},
        ),
    ],
)
def test_every_settings_module_serves_the_friendly_pages(module, extra) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": module, **extra}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    status, html = seen["page"]
    assert status == 404 and "Not found" in html and "URLconf" not in html
    assert seen["api"] == [
        404,
        {"error": {"code": "not_found", "message": "no such endpoint: /api/nope", "details": {}}},
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/no-such-page", "/repos/00000000-0000-0000-0000-000000000000/file?path=a.py"]
)
def test_error_pages_know_who_is_signed_in(path: str) -> None:
    """The header of a 404 shows the signed-in account, not "Sign in" (issue 29 item 3): also
    for an unknown route, answered before the authentication middleware runs."""
    from django.test import Client

    from tests.frontend.signed_in import make_account, ui_client

    account = make_account("read")
    response = ui_client(user=account).get(path)
    html = response.content.decode()
    assert response.status_code == 404
    assert 'data-signed-in="1"' in html and account.get_username() in html
    assert 'class="sign-in-link"' not in html
    if path == "/no-such-page":
        anonymous = Client().get(path)
        assert anonymous.status_code == 404
        assert 'class="sign-in-link"' in anonymous.content.decode()
