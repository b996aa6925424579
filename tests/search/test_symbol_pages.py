"""``sym:`` answers page with a cursor too: the pages are the one list in order, and a cursor
of another query is a 400."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from search.mcp import tools

pytestmark = pytest.mark.django_db


def post(client: Client, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post("/api/search", data=json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def key(hit: dict[str, Any]) -> tuple[str, int]:
    return (hit["file_path"], hit["start_line"])


def test_symbol_pages_add_up_to_the_whole_list(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, whole = post(client, {"query": "sym:auth", "limit": 100})
    assert status == 200 and len(whole["results"]) >= 2 and whole["next_cursor"] is None
    shown, cursor = [], None
    while True:
        status, page = post(client, {"query": "sym:auth", "limit": 1, "cursor": cursor})
        assert status == 200 and page["mode"] == "symbol"
        shown += [key(h) for h in page["results"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert page["truncated"]
    assert shown == [key(h) for h in whole["results"]]
    # MCP, the same.
    names, cursor = [], None
    while True:
        answer = tools.search_code("sym:auth", k=1, cursor=cursor)
        names += [d["location"] for d in answer["definitions"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert len(names) == len(shown)


def test_a_symbol_cursor_of_another_query_is_a_400(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    first = post(client, {"query": "sym:auth", "limit": 1})[1]
    assert first["next_cursor"]
    for query in ("sym:send", '"auth"', "type:file auth", "how is auth done"):
        status, body = post(client, {"query": query, "cursor": first["next_cursor"]})
        assert status == 400 and body["error"]["code"] == "invalid_cursor", query
