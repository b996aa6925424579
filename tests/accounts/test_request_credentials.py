"""How requests prove who they are: bad Authorization headers are 401 (never 500), sessions
must carry the CSRF token on writes, and ``REPO_SEARCH_ANONYMOUS_READ`` opens reads only."""

from __future__ import annotations

import socket

import pytest
from rest_framework.test import APIClient

from indexing.models import IndexJob
from tests.accounts_support import make_account, token_for
from tests.factories import indexed_repository

BAD_HEADERS = {
    "empty": "",
    "scheme only": "Bearer",
    "two tokens": "Bearer rs_aaaaaaaaaaaaaaaaaaaa rs_bbbbbbbbbbbbbbbbbbbb",
    "two headers joined": "Bearer rs_aaaaaaaaaaaaaaaaaaaa, Bearer rs_bbbbbbbbbbbbbbbbbbbb",
    "basic": "Basic YWRtaW46YWRtaW4=",
    "10 kB": "Bearer " + "a" * 10_240,
    "non-ASCII": "Bearer rs_t\u00f6ken\u00f6\u00f6\u00f6\u00f6\u00f6\u00f6\u00f6\u00f6\u00f6\u00f6",
    "NUL": "Bearer rs_aaaaaaaa\x00aaaaaaaaaaaa",
    "unknown": "Bearer rs_" + "z" * 40,
}


@pytest.mark.django_db
@pytest.mark.parametrize("header", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
def test_a_bad_authorization_header_is_401_in_the_error_shape(header: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    for response in (client.get("/api/repos"), client.post("/api/search", {"query": "x"})):
        assert response.status_code == 401, response.content
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert response.json()["error"]["code"] == "authentication_failed"


def test_two_authorization_headers_on_the_wire_are_401(live_server, transactional_db) -> None:  # type: ignore[no-untyped-def]
    secret = token_for(make_account("read"))
    host, port = live_server.url.removeprefix("http://").split(":")
    request = (
        f"GET /api/repos HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {secret}\r\n"
        f"Authorization: Bearer {secret}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line = answer.split(b"\r\n", 1)[0]
    assert b" 401 " in status_line, answer[:300]


@pytest.mark.django_db
def test_session_writes_need_the_csrf_token() -> None:
    repository = indexed_repository("csrf", ["def f():\n    return 1\n"])
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(make_account("write"))
    # A cross-site form post carries the session cookie but not the CSRF token.
    forged = browser.post(f"/api/repos/{repository.pk}/reindex")
    assert forged.status_code == 403
    assert "CSRF" in forged.json()["error"]["message"]
    assert IndexJob.objects.filter(repository=repository).count() == 0
    # Reads need no token; the page's own script sends it for writes.
    assert browser.get("/api/repos").status_code == 200
    browser.get("/api/repos")  # sets nothing: take the token the way the UI does
    from django.middleware.csrf import _get_new_csrf_string, _mask_cipher_secret

    secret = _get_new_csrf_string()
    browser.cookies["csrftoken"] = secret
    allowed = browser.post(
        f"/api/repos/{repository.pk}/reindex", HTTP_X_CSRFTOKEN=_mask_cipher_secret(secret)
    )
    assert allowed.status_code == 202, allowed.content


@pytest.mark.django_db
def test_anonymous_read_opens_reads_and_nothing_else(settings) -> None:  # type: ignore[no-untyped-def]
    repository = indexed_repository("open", ["def parse_header(raw):\n    return raw\n"])
    anonymous = APIClient()
    assert anonymous.get("/api/repos").status_code == 401
    settings.REPO_SEARCH_ANONYMOUS_READ = True
    assert anonymous.get("/api/repos").status_code == 200
    hits = anonymous.post("/api/search", {"query": "parse_header"}, format="json")
    assert hits.status_code == 200 and hits.json()["results"]
    for method, path, body in [
        ("post", "/api/repos", {"url": "https://example.org/a/b.git"}),
        ("post", f"/api/repos/{repository.pk}/reindex", None),
        ("delete", f"/api/repos/{repository.pk}", None),
        ("put", "/api/config", {"chat_provider": "none"}),
        ("get", "/api/tokens", None),
        ("post", "/api/tokens", {"name": "mine"}),
        ("get", "/api/audit", None),
    ]:
        response = getattr(anonymous, method)(path, body, format="json")
        assert response.status_code == 401, (method, path, response.content)
    assert IndexJob.objects.count() == 0
