"""MCP ``search_code`` speaks the query language and ``mode`` like ``POST /api/search``."""

from __future__ import annotations

import json

import pytest

from search.mcp import tools
from search.mcp.tools import ToolInputError

pytestmark = pytest.mark.django_db


def test_quoted_text_is_an_exact_search_with_every_matching_line(indexed) -> None:  # type: ignore[no-untyped-def]
    answer = tools.search_code('"follow_redirects=True" lang:python')
    assert answer["mode"] == "exact"
    assert [f["path"] for f in answer["files"]] == [
        "src/httpclient/client.py",
        "tests/test_client.py",
    ]
    assert answer["files"][0]["lines"] == ["6:     def __init__(self, follow_redirects=True):"]
    assert answer["total"] == 2 and not answer["total_is_lower_bound"] and not answer["truncated"]
    assert set(answer["commits"]) == {"acme/httpclient"}


def test_regex_mode_and_pages(indexed) -> None:  # type: ignore[no-untyped-def]
    first = tools.search_code("return", k=1, mode="regex")
    assert first["mode"] == "regex" and first["truncated"] and first["total"] == 3
    second = tools.search_code("return", k=1, mode="regex", cursor=first["next_cursor"])
    assert second["files"][0]["path"] != first["files"][0]["path"]


def test_plain_questions_stay_hybrid_and_mark_semantic_hits(indexed) -> None:  # type: ignore[no-untyped-def]
    answer = tools.search_code("how are requests sent")
    assert answer["mode"] == "hybrid" and answer["hits"]
    assert all(isinstance(h["semantic"], bool) for h in answer["hits"])
    assert tools.search_code("follow_redirects")["exact_matches"] == 11


@pytest.mark.parametrize(
    ("query", "mode", "code"),
    [
        ("rpo:acme x", None, "unknown_filter"),
        ("/a(/", None, "invalid_regex"),
        ("x", "grep", "invalid_mode"),
        ('"open', None, "unbalanced_quote"),
    ],
)
def test_bad_queries_are_tool_errors_naming_the_problem(indexed, query, mode, code) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ToolInputError) as caught:
        tools.search_code(query, mode=mode)
    error = json.loads(str(caught.value))["error"]
    assert error["code"] == code and error["valid"]


def test_sym_lists_definitions(indexed) -> None:  # type: ignore[no-untyped-def]
    answer = tools.search_code("sym:send")
    assert answer["mode"] == "symbol"
    assert answer["definitions"][0]["symbol"].endswith("send")
    assert answer["definitions"][0]["location"].startswith("src/httpclient/client.py:9")
    assert answer["definitions"][0]["match"] == "exact"
