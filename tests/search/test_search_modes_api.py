"""``POST /api/search`` with the query language: plain questions unchanged, bad input a 400.

Plain text must reach the hybrid pipeline exactly as before the query language: the API's hits
equal ``SearchExecutor().run(SearchRequest(query=...))`` with the API's defaults.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from search.exact.candidates import CandidateScope, PatternCondition
from search.exact.engine import ExactRequest, run_exact
from search.exact.pattern_logic import Term
from search.exact.patterns import compile_term
from search.executor import SearchExecutor, SearchRequest
from tests.search.exact_corpus import FILES
from tests.search.test_query_language import ORDINARY_QUESTIONS

pytestmark = pytest.mark.django_db

URL = "/api/search"


def post(client: Client, body: Any) -> tuple[int, dict[str, Any]]:
    raw = body if isinstance(body, (str, bytes)) else json.dumps(body)
    response = client.post(URL, data=raw, content_type="application/json")
    return response.status_code, response.json()


def _key(hit: Any) -> tuple[Any, ...]:
    get = hit.get if isinstance(hit, dict) else lambda name: getattr(hit, name)
    return (
        str(get("repo_id")),
        get("file_path"),
        get("chunk_index"),
        get("start_line"),
        round(get("combined_score"), 9),
    )


def test_plain_questions_give_the_hybrid_hits_they_gave_before(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    for question in ORDINARY_QUESTIONS:
        status, body = post(client, {"query": question, "limit": 10, "group_by": "chunk"})
        assert status == 200, (question, body)
        assert body["mode"] == "hybrid" and body["query"] == question.strip()
        direct = SearchExecutor().run(SearchRequest(query=question.strip(), limit=10))
        assert [_key(h) for h in body["results"]] == [_key(h) for h in direct.hits], question
        # A further page exactly when the answer goes on past this one (tests/search/test_hybrid_pages.py).
        assert (body["next_cursor"] is None) == (body["total"] <= 10), question


QUESTIONS_WITH_A_PHRASE = [
    'how does "send request" handle timeouts?',
    'where is the "retry" loop configured',
]


def test_a_question_with_a_quoted_phrase_stays_a_question(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    """Quotes alone are an exact search; a quoted phrase among a question's words is not: the
    question runs hybrid as written (full text requires the phrase), as before the language."""
    for question in QUESTIONS_WITH_A_PHRASE:
        status, body = post(client, {"query": question, "limit": 10, "group_by": "chunk"})
        assert status == 200, (question, body)
        assert body["mode"] == "hybrid", question
        direct = SearchExecutor().run(SearchRequest(query=question, limit=10))
        assert [_key(h) for h in body["results"]] == [_key(h) for h in direct.hits], question
    status, body = post(client, {"query": '"send request"', "limit": 10})
    assert status == 200 and body["mode"] == "exact"


def test_hybrid_hits_say_which_are_semantic_and_link_to_the_file(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, body = post(client, {"query": "how are requests sent", "limit": 10})
    assert status == 200 and body["results"]
    for hit in body["results"]:
        assert hit["semantic"] is (hit["bm25_score"] is None and hit["vector_score"] is not None)
        lines = f"#L{hit['start_line']}" + (
            f"-L{hit['end_line']}" if hit["end_line"] > hit["start_line"] else ""
        )
        assert hit["url"] == (
            f"/repos/acme/httpclient/-/blob/{hit['commit']}/{hit['file_path']}{lines}"
        )
    assert any(h["semantic"] for h in body["results"])  # a vector-only neighbour is marked


def test_identifier_queries_say_how_many_exact_matches_exist(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, body = post(client, {"query": "follow_redirects"})
    assert status == 200 and body["mode"] == "hybrid"
    assert body["exact_matches"] == 11 and body["exact_matches_is_lower_bound"] is False
    status, body = post(client, {"query": "frobnicate_the_widget"})
    assert status == 200 and body["exact_matches"] == 0
    status, body = post(client, {"query": "how are redirects followed"})
    assert body["exact_matches"] is None  # a question is not one identifier


def test_mode_overrides_the_query_language(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, body = post(client, {"query": "obj.foo.bar[baz]()", "mode": "exact"})
    assert status == 200 and body["mode"] == "exact"
    assert [h["file_path"] for h in body["results"]] == ["src/httpclient/util.js"]
    status, body = post(client, {"query": r"def \w+_auth", "mode": "regex"})
    assert status == 200 and body["mode"] == "regex"
    assert [m["line"] for h in body["results"] for m in h["matches"]] == [13, 16]
    status, body = post(client, {"query": '"follow_redirects"', "mode": "semantic"})
    assert status == 200 and body["mode"] == "hybrid"


def test_a_cursor_belongs_to_its_query(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, first = post(client, {"query": '"client"', "limit": 1})
    assert status == 200 and first["truncated"] and first["next_cursor"]
    status, body = post(client, {"query": '"return"', "limit": 1, "cursor": first["next_cursor"]})
    assert status == 400 and body["error"]["code"] == "invalid_cursor"
    status, body = post(client, {"query": '"client"', "cursor": "not-a-cursor"})
    assert status == 400 and body["error"]["code"] == "invalid_cursor"
    status, body = post(client, {"query": "plain words", "cursor": first["next_cursor"]})
    assert status == 400 and body["error"]["code"] == "invalid_cursor"


def test_counting_stops_at_its_cap_with_a_lower_bound(indexed) -> None:  # type: ignore[no-untyped-def]
    _, repository = indexed
    term = Term("literal", "return", 0)
    request = ExactRequest(
        matchers=[compile_term(term, False)],
        conditions=[PatternCondition(["return"])],
        scope=CandidateScope(repo_ids=[repository.pk]),
        fingerprint="t",
        limit=1,
        count_max_files=1,
        count_budget_ms=60_000,  # the cap on files is what stops it here, not the time
    )
    result = run_exact(request)
    assert len(result.hits) == 1 and result.total == 2 and result.total_is_lower_bound
    assert result.truncated and result.next_cursor
    request.count_max_files = 100
    assert run_exact(request).total == 3 and not run_exact(request).total_is_lower_bound


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ("rpo:httpx timeout", 400, "unknown_filter"),
        ('"unbalanced', 400, "unbalanced_quote"),
        ("/a(/", 400, "invalid_regex"),
        ("/.{0,100000}/", 400, "invalid_regex"),
        ('""', 400, "empty_pattern"),
        ('"a\u0000b"', 400, "invalid"),
        ("lang:go " * 120, 400, "too_many_filters"),
        ("repo:acme/httpclient", 400, "empty_query"),
        ("type:file /client/", 400, "invalid_filter"),  # file names take no regex
        ("sym:a sym:b", 400, "invalid_filter"),
        ("x" * 1001, 413, None),
    ],
)
def test_bad_queries_are_clear_errors(
    indexed, client: Client, query: str, status: int, code
) -> None:  # type: ignore[no-untyped-def]
    got, body = post(client, {"query": query})
    assert got == status, body
    assert set(body["error"]) == {"code", "message", "details"}
    if code:
        assert body["error"]["code"] == code


def test_invalid_utf8_and_huge_patterns_never_fail(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    got, body = post(client, b'{"query": "\xff\xfe \\"x\\""}')
    assert got == 400 and body["error"]["code"]
    for query in ["/(a*)*b/", "/" + "(x+x+)+y" * 100 + "/", "/./", '"' + "e" * 900 + '"']:
        got, body = post(client, {"query": query, "limit": 3})
        assert got == 200, (query, body)
        assert body["mode"] == "regex" or body["mode"] == "exact"
    got, every_line = post(client, {"query": "/./", "limit": 3})
    assert every_line["truncated"] and len(every_line["results"]) == 3
    if every_line["total_is_lower_bound"]:  # counting ran out of its time (a busy machine)
        assert 3 <= every_line["total"] < 6
    else:
        assert every_line["total"] == 6 and every_line["match_total"] > 300


def test_the_results_page_shows_exact_hits_per_file_with_their_lines(
    indexed, client: Client
) -> None:  # type: ignore[no-untyped-def]
    request = {"query": '"follow_redirects"', "limit": 10}
    status, answer = post(client, request)
    assert status == 200
    for hit in answer["results"]:
        del hit["content"]  # as the search page sends it
    page = client.post(
        "/ui/results",
        data=json.dumps({"request": request, "response": answer}),
        content_type="application/json",
    )
    html = page.content.decode()
    assert page.status_code == 200
    assert "3 files, 11 matching lines" in html
    assert "8 matching lines" in html and "2 matching lines" in html
    assert html.count('<tr class="hit">') >= 3  # marked lines from the first snippets
    # Each file shows its snippets (long.txt from line 35), not its first chunk (from line 1).
    assert '<td class="ln">35</td>' in html and '<td class="ln">1</td>' not in html


class SteppingClock:
    """Time that passes 0.3 s each time it is read: the search's budget runs out on cue."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.3
        return self.now


def test_a_search_out_of_time_returns_what_it_found_and_continues(indexed) -> None:  # type: ignore[no-untyped-def]
    _, repository = indexed
    term = Term("regex", ".", 0)
    found: list[str] = []
    cursor = None
    rounds = 0
    for rounds in range(1, 11):  # noqa: B007 - the count is asserted below
        result = run_exact(
            ExactRequest(
                matchers=[compile_term(term, False)],
                conditions=[PatternCondition([])],
                scope=CandidateScope(repo_ids=[repository.pk]),
                fingerprint="budget",
                limit=50,
                cursor=cursor,
                budget_ms=1000,
                clock=SteppingClock(),
            )
        )
        found += [h.file.path for h in result.hits]
        if not result.timed_out:
            break
        assert result.hits and result.total_is_lower_bound and result.next_cursor
        cursor = result.next_cursor
    assert rounds > 2  # the budget did run out, more than once
    assert found == sorted(FILES)  # every file once, in order, across the timed-out pages


def test_sym_finds_definitions_exact_then_prefix_then_substring(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    def found(query: str) -> list[tuple[str, str, str]]:
        status, body = post(client, {"query": query, "limit": 10})
        assert status == 200 and body["mode"] == "symbol", body
        return [(h["symbol"], h["file_path"], h["symbol_match"]) for h in body["results"]]

    client_defs = found("sym:client")
    assert client_defs[0] == ("Client", "src/httpclient/client.py", "exact")
    assert ("test_client_follows", "tests/test_client.py", "substring") in client_defs
    assert found("sym:make")[0][::2] == ("make_auth", "prefix")
    assert {s for s, _, t in found("sym:auth") if t == "substring"} >= {"make_auth", "token_auth"}
    assert found("type:symbol send") == found("sym:send")
    assert [p for _, p, _ in found("sym:client -file:tests/")] == ["src/httpclient/client.py"]
    assert found("sym:nothing_named_so") == []
    # The lookup's time is the answer's and its stage's (both were a fixed 0.0).
    status, body = post(client, {"query": "sym:client", "limit": 10})
    assert status == 200 and body["ms"] > 0
    assert [(s["name"], s["ms"]) for s in body["trace"]] == [("symbol", body["ms"])]
