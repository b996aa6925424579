"""Slow clients cannot starve the server (issue 33 item 1): under a real uvicorn, 50
connections that send the start of a body and stop leave health, search and the UI answering,
and are closed with 408 at the deadline; one address cannot hold more than its share; a large
body is read only after its credentials check out."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.test import Client

from reposearch.asgi import build_application
from reposearch.request_bodies import BodyGate
from tests.accounts_support import bearer, make_account, token_for
from tests.asgi_server import serving_the_site

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[tuple[str, BodyGate]]:
    settings.REPO_SEARCH_BODY_TIMEOUT_SECS = 8
    app = build_application()
    with serving_the_site(monkeypatch, app) as base:
        yield base, app


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def _slow_request(
    base: str, source: str, *, path: str = "/api/search", length: int = 1000, headers: str = ""
) -> socket.socket:
    """A connection from ``source`` (any 127.x address is this machine) that sends the headers
    and the start of a body, then nothing."""
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", _port(base)))
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n{headers}\r\n".encode()
        + b'{"query": "a'
    )
    return sock


def _wait_until(condition: Any, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the server never saw the slow requests"
        time.sleep(0.05)


def _answer(sock: socket.socket, timeout: float = 30) -> bytes:
    """Everything the server sends until it closes the connection."""
    sock.settimeout(timeout)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def _session_cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def test_fifty_slow_bodies_leave_health_search_and_pages_answering(site) -> None:
    base, app = site
    user = make_account("read")
    token, cookie = token_for(user), _session_cookie(user)
    # Ten addresses with five connections each: all under the per-address share, all held.
    slow = [_slow_request(base, f"127.0.0.{2 + n // 5}") for n in range(50)]
    try:
        _wait_until(lambda: app.waiting() == 50)
        with httpx.Client(base_url=base, timeout=10) as client:
            health = client.get("/api/health")
            assert health.status_code in (200, 503)  # 503: no Celery worker in this test
            assert "database" not in health.json()["down"]
            search = client.post("/api/search", json={"query": "anything"}, headers=bearer(token))
            assert search.status_code == 200, search.text
            client.cookies.set("sessionid", cookie)
            page = client.get("/")
            assert page.status_code == 200 and b"<html" in page.content.lower()
        assert app.waiting() == 50  # the slow ones were still open meanwhile

        for sock in slow:
            answer = _answer(sock)
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert b"body_timeout" in answer
    finally:
        for sock in slow:
            sock.close()
    assert app.waiting() == 0


def test_one_address_cannot_hold_more_than_its_share(site, settings: Any) -> None:
    base, app = site
    settings.REPO_SEARCH_PENDING_BODIES_PER_ADDRESS = 4
    held = [_slow_request(base, "127.0.0.2") for _ in range(4)]
    try:
        _wait_until(lambda: app.waiting() == 4)
        extra = _slow_request(base, "127.0.0.2")
        answer = _answer(extra)
        extra.close()
        assert answer.startswith(b"HTTP/1.1 429"), answer[:200]
        assert b"too_many_bodies" in answer and b"retry-after: 5" in answer.lower()
        # Another address is not held up by it.
        token = token_for(make_account("read"))
        search = httpx.post(
            f"{base}/api/search", json={"query": "x"}, headers=bearer(token), timeout=10
        )
        assert search.status_code == 200
    finally:
        for sock in held:
            sock.close()


def test_a_large_body_is_read_only_after_its_credentials_check_out(site) -> None:
    base, app = site
    large = 200_000  # over the 64 KiB that anonymous requests may send, under the 1 MiB limit
    anonymous = _slow_request(base, "127.0.0.3", length=large)
    forged = _slow_request(
        base, "127.0.0.3", length=large, headers="Authorization: Bearer rs_" + "x" * 40 + "\r\n"
    )
    try:
        for sock in (anonymous, forged):
            answer = _answer(sock)  # at once: the rest of the body is never waited for
            assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
            assert b"needs a valid API token or a signed-in session" in answer
    finally:
        anonymous.close()
        forged.close()

    token = token_for(make_account("read"))
    body = b'{"query": "' + b"a" * (large - 20) + b'"}'
    accepted = httpx.post(
        f"{base}/api/search",
        content=body,
        headers={**bearer(token), "Content-Type": "application/json"},
        timeout=10,
    )
    assert accepted.status_code != 401, accepted.text  # read, then judged by the search view

    # A webhook delivery proves itself with a signature over its body: its body is read.
    hook = httpx.post(f"{base}/api/hooks/999999", content=b"x" * large, timeout=10)
    assert hook.status_code != 401 or b"needs a valid API token" not in hook.content
    assert app.waiting() == 0


def test_a_chunked_body_past_the_limit_is_413(site) -> None:
    base, _ = site
    token = token_for(make_account("read"))

    def chunks() -> Iterator[bytes]:
        for _ in range(20):
            yield b"a" * 65536  # 1.25 MiB in all, no Content-Length

    refused = httpx.post(
        f"{base}/api/search",
        content=chunks(),
        headers={**bearer(token), "Content-Type": "application/json"},
        timeout=10,
    )
    assert refused.status_code == 413
    assert refused.json()["error"]["code"] == "body_too_large"
