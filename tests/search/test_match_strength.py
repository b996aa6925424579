"""A hybrid answer with no strong match says so (``only_weak_matches``) in the API, the UI and
MCP, instead of presenting its results as hits (issue 29 item 2). On the real indexed corpus,
with the bundled embedding model."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from search.mcp import tools
from search.types import SearchTuning
from tests.frontend.signed_in import ui_client
from tests.search.test_exact_search import post

pytestmark = pytest.mark.django_db

NONSENSE = "frobnicate the quux"


@pytest.mark.parametrize(
    ("query", "weak"),
    [
        (NONSENSE, True),
        ("banana smoothie recipe", True),
        ("how are requests sent", False),
        ("follow redirects", False),
        ("token auth bearer header", False),
    ],
)
def test_the_api_flags_answers_without_a_strong_match(
    indexed, client: Client, query: str, weak: bool
) -> None:  # type: ignore[no-untyped-def]
    status, body = post(client, {"query": query})
    assert status == 200, body
    assert body["mode"] == "hybrid" and body["results"]  # the vector lists always answer
    assert body["only_weak_matches"] is weak, [
        (h["file_path"], h["bm25_score"], h["vector_score"]) for h in body["results"]
    ]


def test_the_page_says_no_strong_match(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    for query, shown in ((NONSENSE, True), ("follow redirects", False)):
        _, response = post(client, {"query": query})
        body = {"request": {"query": query}, "response": response}
        html = (
            ui_client()
            .post("/ui/results", json.dumps(body), content_type="application/json")
            .content.decode()
        )
        assert ("No strong match" in html) is shown
        assert (" weak result" in html) is shown


def test_mcp_says_only_weak_matches_and_stays_compact(indexed) -> None:  # type: ignore[no-untyped-def]
    assert tools.search_code(NONSENSE)["only_weak_matches"] is True
    assert "only_weak_matches" not in tools.search_code("follow redirects")


def test_the_more_from_this_file_search_keeps_to_that_file(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    """What a card's "More from this file" asks: the question inside repo: and file:."""
    query = "how are requests sent repo:acme/httpclient file:src/httpclient/client.py"
    status, body = post(client, {"query": query})
    assert status == 200, body
    assert body["mode"] == "hybrid" and body["results"]
    assert {h["file_path"] for h in body["results"]} == {"src/httpclient/client.py"}


def test_mcp_exact_answers_flag_their_line_total(indexed) -> None:  # type: ignore[no-untyped-def]
    answer = tools.search_code('"filler"')
    assert answer["match_total_is_lower_bound"] is False and answer["total_is_lower_bound"] is False
    (entry,) = [f for f in answer["files"] if f["path"] == "notes/long.txt"]
    assert entry["more_lines"] > 0  # the lines left out of a file are said


def test_list_totals_that_hold_every_match_are_not_lower_bounds(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, body = post(client, {"query": "follow redirects"})
    assert status == 200
    assert body["total_bm25_hits"] > 0 and body["total_bm25_hits_is_lower_bound"] is False
    assert body["total_vector_hits_is_lower_bound"] is False  # fewer chunks than a list's depth


def test_list_totals_cut_at_their_depth_are_lower_bounds(indexed) -> None:  # type: ignore[no-untyped-def]
    """Lists as deep as 2 chunks: more than that match "client", so both counts are minimums."""
    from search.executor import SearchExecutor, SearchRequest

    result = SearchExecutor().run(SearchRequest(query="client", tuning=SearchTuning(list_depth=2)))
    assert result.total_bm25_hits >= 2 and result.bm25_hits_is_lower_bound is True
    assert result.vector_hits_is_lower_bound is True
