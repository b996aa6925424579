"""Security headers on every kind of response, and pages the Content-Security-Policy can allow:
no inline script, no ``on…=`` handler, no ``style`` attribute or ``<style>`` block, anywhere."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client, RequestFactory

from indexing.clone_paths import repository_dir
from indexing.models import Repository
from reposearch.views import server_error
from tests.factories import indexed_repository
from tests.frontend.signed_in import api_client

pytestmark = pytest.mark.django_db
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
DATA_SCRIPT_TYPES = {"application/json", "application/ld+json"}  # data, never run


class InlineCode(HTMLParser):
    """Collects what a CSP of ``script-src 'self'; style-src 'self'`` would refuse."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        self.found += [f"<{tag} {name}=…>" for name in names if re.fullmatch(r"on[a-z]+", name)]
        if "style" in names:
            self.found.append(f'<{tag} style="{names["style"]}">')
        if tag == "style":
            self.found.append("<style> block")
        if tag == "script" and not names.get("src"):
            self.in_script = (names.get("type") or "").lower() not in DATA_SCRIPT_TYPES
        for name in ("href", "src", "action", "formaction"):
            if (names.get(name) or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}=javascript:…>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self.in_script = False

    def handle_data(self, data: str) -> None:
        if self.in_script and data.strip():
            self.found.append(f"inline <script>: {data.strip()[:60]}")


def inline_code(html: str) -> list[str]:
    parser = InlineCode()
    parser.feed(html)
    parser.close()
    return parser.found


def test_the_checker_finds_what_the_policy_refuses() -> None:
    html = (
        '<p style="color:red" onclick="x()">a</p><script>alert(1)</script><style>p{}</style>'
        '<a href="javascript:void(0)">b</a><script type="application/json">{"a": 1}</script>'
        '<script src="/static/a.js"></script>'
    )
    assert len(inline_code(html)) == 5


@pytest.fixture
def superuser() -> User:
    return User.objects.create_superuser("root", "root@example.org", "a-long-test-password")


@pytest.fixture
def admin_client(superuser: User) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


@pytest.fixture
def repository() -> Iterator[Repository]:
    repository = indexed_repository(
        "acme/headers",
        ["def parse_header(line):\n    return line.split(':')", "def retry():\n    pass"],
        clone=True,
    )
    yield repository
    shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def assert_headers(response: Any) -> None:
    assert response["Content-Security-Policy"] == CSP
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"


def test_headers_on_a_page_an_api_response_an_admin_page_and_errors(admin_client: Client) -> None:
    assert_headers(admin_client.get("/"))
    assert_headers(Client().get("/sign-in"))
    assert_headers(admin_client.get("/admin/"))
    assert_headers(Client().get("/admin/login/"))
    assert_headers(Client().get("/api/health"))
    assert_headers(api_client().get("/api/repos"))
    assert_headers(Client().get("/api/no-such-endpoint"))  # the JSON 404
    assert_headers(admin_client.get("/no-such-page"))


def ui_pages(client: Client, repository: Repository) -> dict[str, str]:
    file_path = repository.files.first().path
    pages = {
        url: client.get(url)
        for url in (
            "/",
            "/?q=parse+header",
            "/ask/",
            "/repos/",
            "/settings/",
            "/tokens/",
            "/audit/",
            f"/repos/{repository.name}/-/blob/HEAD/{file_path}",
            f"/repos/{repository.name}/-/tree/HEAD",
            f"/repos/{repository.pk}/-/blob/HEAD/missing.py",
            "/no-such-page",
            "/api/docs",
        )
    }
    search = api_client().post("/api/search", {"query": "parse header"}, format="json").json()
    pages["/ui/results"] = client.post(
        "/ui/results",
        json.dumps({"request": {"query": "parse header"}, "response": search}),
        content_type="application/json",
    )
    pages["/ui/answer"] = client.post(
        "/ui/answer",
        json.dumps({"question": "q", "error": {"code": "x", "message": "no model", "details": {}}}),
        content_type="application/json",
    )
    assert search["results"], "the results fragment is checked with real results"
    return pages


def test_no_page_of_the_ui_has_inline_script_or_style(
    admin_client: Client, repository: Repository
) -> None:
    for url, response in ui_pages(admin_client, repository).items():
        assert response.status_code in (200, 404), (url, response.status_code)
        html = response.content.decode()
        assert inline_code(html) == [], url
    signed_out = Client()
    for url in ("/sign-in", "/sign-in?next=/repos/"):
        assert inline_code(signed_out.get(url).content.decode()) == [], url
    failed = signed_out.post("/sign-in", {"username": "nobody", "password": "wrong"})
    assert (
        "correct username" in failed.content.decode() and inline_code(failed.content.decode()) == []
    )
    error_page = server_error(RequestFactory().get("/")).content.decode()
    assert "Something went wrong" in error_page and inline_code(error_page) == []


def test_the_swagger_page_loads_its_start_up_script_from_a_file(admin_client: Client) -> None:
    html = admin_client.get("/api/docs").content.decode()
    script = re.search(r'<script src="(/api/docs\?[^"]*script=[^"]*)"', html)
    assert script, html
    response = admin_client.get(script.group(1).replace("&amp;", "&"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in response.content.decode()


def admin_pages(superuser: User, repository: Repository) -> list[str]:
    urls = ["/admin/", "/admin/password_change/", f"/admin/auth/user/{superuser.pk}/change/"]
    for model in admin.site._registry:
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        urls += [base, base + "?q=a", base + "add/"]
        first = model._default_manager.first()
        if first is not None:
            urls.append(f"{base}{first.pk}/change/")
    return urls


def test_no_admin_page_has_inline_script_or_style(
    admin_client: Client, superuser: User, repository: Repository
) -> None:
    assert inline_code(Client().get("/admin/login/").content.decode()) == []
    checked = 0
    for url in admin_pages(superuser, repository):
        response = admin_client.get(url)
        if response.status_code == 403:  # read-only records have no add page
            continue
        assert response.status_code == 200, url
        assert inline_code(response.content.decode()) == [], url
        checked += 1
    assert checked > 10


def test_the_browsable_api_runs_no_inline_script(admin_client: Client) -> None:
    """DRF's page has a ``<style>`` of Pygments colours and two ``style`` attributes (floats)
    in its own template, which the policy refuses: it loses those colours, nothing else."""
    response = admin_client.get("/api/repos", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and "<html" in response.content.decode()
    found = inline_code(response.content.decode())
    assert [item for item in found if "style" not in item] == []


def test_static_files_served_by_whitenoise_carry_the_headers(tmp_path: Path, settings: Any) -> None:
    """In production WhiteNoise answers /static/ itself, inside the headers middleware."""
    from django.http import HttpResponse
    from whitenoise.middleware import WhiteNoiseMiddleware

    from reposearch.security_headers import SecurityHeadersMiddleware

    order = settings.MIDDLEWARE
    assert order.index("reposearch.security_headers.SecurityHeadersMiddleware") < order.index(
        "whitenoise.middleware.WhiteNoiseMiddleware"
    )
    (tmp_path / "frontend").mkdir()
    (tmp_path / "frontend" / "app.js").write_text("console.log(1);\n")
    settings.STATIC_ROOT = tmp_path
    chain = SecurityHeadersMiddleware(WhiteNoiseMiddleware(lambda request: HttpResponse("app")))
    response = chain(RequestFactory().get("/static/frontend/app.js"))
    assert response.status_code == 200 and "javascript" in response["Content-Type"]
    assert_headers(response)


def test_production_settings_pass_djangos_deployment_checks() -> None:
    """Secure cookies, nosniff, frame denial, referrer policy: once HSTS is on for an https-only
    site, ``check --deploy`` finds only choices left to the operator on purpose: the https
    redirect (the TLS proxy's job; in-container health checks use plain http) and HSTS for
    subdomains and browsers' preload lists (they bind other sites of the domain)."""
    import os
    import secrets
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "REPO_SEARCH_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="reposearch.settings.production",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="search.example.com",
        DEBUG="0",
        SECURE_HSTS_SECONDS="31536000",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    found = set(re.findall(r"\(security\.(W\d+)\)", result.stdout + result.stderr))
    assert found == {"W005", "W008", "W021"}, result.stdout + result.stderr
