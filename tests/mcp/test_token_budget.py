"""MCP answers keep to ``max_tokens``: shorter snippets, then fewer results, an honest
``truncated`` and a cursor that goes on exactly where the answer stopped -- so the pages of a
small budget add up to the answer of a large one. Bad budgets are tool errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from indexing.models import Repository
from search.mcp import tools
from search.mcp.budget import CHARS_PER_TOKEN, compact_json
from search.mcp.tools import ToolInputError
from tests.search.exact_corpus import FILES

pytestmark = pytest.mark.django_db


def size_in_tokens(answer: dict[str, Any]) -> float:
    return len(compact_json(answer)) / CHARS_PER_TOKEN


def all_pages(query: str, max_tokens: int, **args: Any) -> list[dict[str, Any]]:
    pages, cursor = [], None
    while True:
        page = tools.search_code(query, cursor=cursor, max_tokens=max_tokens, **args)
        assert size_in_tokens(page) <= max_tokens, (len(pages), page)
        assert page.get("hits", page.get("files")), page  # the budget always holds one result
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return pages
        assert page["truncated"] and len(pages) < 100


def test_hybrid_pages_of_a_small_budget_add_up_to_the_large_answer(indexed) -> None:  # type: ignore[no-untyped-def]
    question = "how does the client send a request with follow redirects"
    whole = tools.search_code(question, k=30, max_tokens=50_000)
    assert not whole["truncated"] and "truncated_by" not in whole
    small = all_pages(question, 600, k=30)
    assert len(small) > 1
    assert any("truncated_by" in page for page in small)
    locations = [h["location"] for page in small for h in page["hits"]]
    assert locations == [h["location"] for h in whole["hits"]]
    # Snippets shrink before hits are dropped: 600 tokens cannot hold 30 hits' snippets, so
    # they are cut, each to the first lines of its chunk and a last line naming the get_file
    # call that reads the rest.
    shortened = 0
    for hit in (h for page in small for h in page["hits"]):
        path, span = hit["location"].rsplit(":", 1)
        start, end = (int(n) for n in span.split("-"))
        chunk = str(FILES[path]).splitlines()[start - 1 : end]
        shown = hit["snippet"].splitlines()
        if shown == chunk:
            continue
        shortened += 1
        *kept, note = shown
        assert kept == chunk[: len(kept)]
        call = f"get_file(repo, path, {start}, {end}) for {hit['location']}"
        assert note == f"... {len(chunk) - len(kept)} more lines: {call}"
    assert shortened


def test_exact_answers_shorten_lines_then_drop_files_and_go_on(indexed) -> None:  # type: ignore[no-untyped-def]
    big = tools.search_code('"filler text"', max_tokens=50_000)
    (entry,) = big["files"]
    assert entry["match_count"] > 250 and len(entry["lines"]) == 20
    assert entry["more_lines"] == entry["match_count"] - 20
    small = tools.search_code('"filler text"', max_tokens=500)
    assert size_in_tokens(small) <= 500
    (short,) = small["files"]
    assert short["more_lines"] == short["match_count"] - len(short["lines"])
    # Every file: pages of a small budget list every file of the large answer, in order.
    whole = tools.search_code("/./", k=30, max_tokens=50_000)
    assert len(whole["files"]) == len(FILES) and not whole["truncated"]
    pages = all_pages("/./", 500, k=30)
    shown = [len(f["lines"]) for p in pages for f in p["files"]]
    assert shown < [len(f["lines"]) for f in whole["files"]]  # fewer lines a file first
    assert [f["path"] for p in pages for f in p["files"]] == [f["path"] for f in whole["files"]]
    assert len(pages) > 1 and {p["total"] for p in pages} == {whole["total"]}


def test_get_file_stops_at_the_budget_and_goes_on_from_there(indexed) -> None:  # type: ignore[no-untyped-def]
    repository = Repository.objects.get(name="acme/httpclient")
    path = next(p for p, text in FILES.items() if isinstance(text, str) and text.count("\n") > 300)
    text = str(FILES[path])
    parts, start = [], 1
    while start is not None:
        read = tools.get_file(repository.name, path, start_line=start, max_tokens=500)
        assert size_in_tokens(read) <= 500
        parts.append(read["content"])
        if read["next_start_line"] is not None:
            assert read["truncated"] and read["truncated_by"].startswith("max_tokens=500")
        start = read["next_start_line"]
    assert len(parts) > 3
    assert "\n".join(parts) == text.rstrip("\n")


@pytest.mark.parametrize("budget", [0, 499, 50_001, -5, True, "6000", 2.5])
def test_a_budget_out_of_range_or_of_the_wrong_type_is_a_tool_error(indexed, budget) -> None:  # type: ignore[no-untyped-def]
    for call in (
        lambda: tools.search_code("client", max_tokens=budget),
        lambda: tools.get_file("acme/httpclient", "src/httpclient/client.py", max_tokens=budget),
    ):
        with pytest.raises(ToolInputError) as caught:
            call()
        error = json.loads(str(caught.value))["error"]
        assert error["code"] == "invalid_max_tokens" and "500..50000" in error["valid"]


def test_a_cursor_that_is_not_one_is_a_tool_error(indexed) -> None:  # type: ignore[no-untyped-def]
    for cursor in ("x" * 5000, "bm90IGEgY3Vyc29y"):
        with pytest.raises(ToolInputError) as caught:
            tools.search_code("how is a request sent", cursor=cursor)
        assert json.loads(str(caught.value))["error"]["code"] == "invalid_cursor"
