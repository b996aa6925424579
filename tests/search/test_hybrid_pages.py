"""Hybrid (natural-language) answers page with a cursor like exact ones: the pages are the one
long ranked answer cut in pieces, no hit twice, true totals, and a cursor of another query,
mode or account is a 400."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from search.exact.hybrid_pages import MAX_RESULTS
from search.executor import SearchExecutor, SearchRequest
from search.types import SearchTuning

pytestmark = pytest.mark.django_db

URL = "/api/search"
QUESTION = "how does the client send a request with follow redirects"


def post(client: Client, body: Any) -> tuple[int, dict[str, Any]]:
    response = client.post(URL, data=json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def _key(hit: dict[str, Any]) -> tuple[Any, ...]:
    return (hit["file_path"], hit["chunk_index"], hit["start_line"])


def pages_of(client: Client, body: dict[str, Any]) -> list[dict[str, Any]]:
    pages, cursor = [], None
    while True:
        status, page = post(client, {**body, "cursor": cursor} if cursor else body)
        assert status == 200, page
        pages.append(page)
        cursor = page["next_cursor"]
        if not cursor:
            return pages
        assert page["truncated"]
        assert len(pages) < 50


def test_pages_are_the_whole_ranked_answer_cut_in_pieces(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    pages = pages_of(client, {"query": QUESTION, "limit": 3, "group_by": "chunk"})
    hits = [h for page in pages for h in page["results"]]
    whole = SearchExecutor().run(
        SearchRequest(
            query=QUESTION, limit=MAX_RESULTS, tuning=SearchTuning(fusion_top=MAX_RESULTS)
        )
    )
    assert len(pages) > 2  # the corpus has more than 6 chunks for the question
    assert [_key(h) for h in hits] == [
        (h.file_path, h.chunk_index, h.start_line) for h in whole.hits
    ]
    assert len({_key(h) for h in hits}) == len(hits)  # never the same hit twice
    assert {page["total"] for page in pages} == {len(hits)}  # the total is true on every page
    assert all(page["mode"] == "hybrid" for page in pages)
    assert not pages[-1]["truncated"] and pages[-1]["next_cursor"] is None
    # The first page is what a search without a cursor gave before pages existed.
    first = SearchExecutor().run(SearchRequest(query=QUESTION, limit=3))
    assert [_key(h) for h in pages[0]["results"]] == [
        (h.file_path, h.chunk_index, h.start_line) for h in first.hits
    ]


def test_a_page_that_holds_everything_has_no_cursor(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, body = post(client, {"query": QUESTION, "limit": 100})
    assert status == 200
    assert body["total"] == len(body["results"]) and not body["truncated"]
    assert body["next_cursor"] is None and not body["total_is_lower_bound"]


@pytest.mark.parametrize(
    "other",
    [
        {"query": "a different question about tokens"},
        {"query": QUESTION, "use_vector": False},
        {"query": QUESTION, "include_tests": True},
        {"query": '"follow_redirects"'},  # an exact search
    ],
    ids=["other-query", "other-methods", "other-scope", "exact-mode"],
)
def test_a_cursor_of_another_search_is_a_400(indexed, client: Client, other) -> None:  # type: ignore[no-untyped-def]
    status, first = post(client, {"query": QUESTION, "limit": 2})
    assert status == 200 and first["next_cursor"]
    status, body = post(client, {**other, "limit": 2, "cursor": first["next_cursor"]})
    assert status == 400, body
    assert body["error"]["code"] == "invalid_cursor"


def test_an_exact_cursor_or_garbage_on_a_hybrid_search_is_a_400(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, exact = post(client, {"query": '"return"', "limit": 1})
    assert status == 200 and exact["next_cursor"]
    for bad in (exact["next_cursor"], "bm90IGEgY3Vyc29y", "%%%", "eyJoIjogIiJ9", "x" * 3999):
        status, body = post(client, {"query": QUESTION, "cursor": bad})
        assert status == 400, (bad, body)
        assert body["error"]["code"] == "invalid_cursor" and body["error"]["message"]


def test_pages_keep_to_what_the_account_may_see(corpus) -> None:  # type: ignore[no-untyped-def]
    from tests.accounts.test_visibility_api import api
    from tests.accounts.visibility_corpus import leaks

    question = {"query": "vault token for the connection pool", "limit": 1, "group_by": "chunk"}
    names: dict[str, set[str]] = {}
    cursors: dict[str, str] = {}
    for who in ("member", "outsider"):
        client = api(getattr(corpus, who))
        seen: set[str] = set()
        status, page = post_api(client, question)
        cursors[who] = page["next_cursor"]
        while True:
            assert status == 200, page
            seen |= {h["repo_name"] for h in page["results"]}
            if who == "outsider":
                assert not leaks(page, corpus.vault)
            if not page["next_cursor"]:
                break
            status, page = post_api(client, {**question, "cursor": page["next_cursor"]})
        names[who] = seen
    assert names == {"member": {"acme/shop", "acme/vault"}, "outsider": {"acme/shop"}}
    # Another account's cursor is refused like a corrupt one.
    status, body = post_api(api(corpus.outsider), {**question, "cursor": cursors["member"]})
    assert status == 400 and body["error"]["code"] == "invalid_cursor"


def post_api(client: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post(URL, body, format="json")
    return response.status_code, response.json()
