"""``/mcp`` under a real uvicorn (issue 33, Low): it answers with the site's security headers,
refusals included, and opens no event stream that a client could hold open for ever -- a GET
is a 405 at once (the MCP client's session over POST alone: tests/mcp/test_mcp_transports.py)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from reposearch.security_headers import HEADERS
from tests.accounts_support import bearer, make_account, token_for
from tests.asgi_server import serving_the_site

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "tests", "version": "1"},
    },
}
JSON_OR_STREAM = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with serving_the_site(monkeypatch) as base:
        yield base


def assert_security_headers(response: httpx.Response) -> None:
    for name, value in HEADERS.items():
        assert response.headers.get(name) == value, (name, response.status_code)


def test_every_mcp_answer_carries_the_sites_security_headers(site: str) -> None:
    token = token_for(make_account("read"))
    answered = httpx.post(
        f"{site}/mcp", headers={**bearer(token), **JSON_OR_STREAM}, json=INITIALIZE, timeout=10
    )
    assert answered.status_code == 200
    assert answered.json()["result"]["serverInfo"]["name"]
    refused = httpx.post(f"{site}/mcp", headers=JSON_OR_STREAM, json=INITIALIZE, timeout=10)
    assert refused.status_code == 401
    for response in (answered, refused):
        assert_security_headers(response)


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_no_event_stream_is_opened_a_get_is_refused_at_once(site: str, method: str) -> None:
    token = token_for(make_account("read"))
    headers = {**bearer(token), "Accept": "text/event-stream"}
    # Before, a GET was a text/event-stream answered with a ping every 15 s, never ending: the
    # read below would time out instead of returning.
    response = httpx.request(method, f"{site}/mcp", headers=headers, timeout=10)
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert_security_headers(response)
