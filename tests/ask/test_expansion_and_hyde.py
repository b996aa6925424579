"""Call-graph expansion (callees to a depth, a few callers) and HyDE, end to end."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.visibility import Viewer
from bench.eval.harness.ask_checks import check_citations, retrieve_for_evaluation
from indexing.models import Chunk
from search.ask.callgraph import ExpansionLimits, expand_call_graph
from search.ask.context import load_snippets
from tests.accounts_support import token_client

pytestmark = pytest.mark.django_db


def seeds(*symbols: str) -> list[Any]:
    ids = [Chunk.objects.get(symbol=s).pk for s in symbols]
    return load_snippets(ids, Viewer())


def test_callees_are_followed_to_the_configured_depth(shop) -> None:
    added = expand_call_graph(seeds("start_app"), Viewer(), ExpansionLimits(depth=2, max_callers=0))
    found = {(s.symbol, s.origin, s.depth, s.via) for s in added}
    assert ("configure_pool", "callee", 1, "start_app") in found
    assert ("serve", "callee", 1, "start_app") in found
    assert ("read_pool_size", "callee", 2, "configure_pool") in found
    assert ("ConnectionPool", "callee", 2, "configure_pool") in found
    # clamp sits three calls away: beyond depth 2.
    assert "clamp" not in {s.symbol for s in added}

    deeper = expand_call_graph(
        seeds("start_app"), Viewer(), ExpansionLimits(depth=3, max_callers=0)
    )
    clamp = next(s for s in deeper if s.symbol == "clamp")
    assert (clamp.path, clamp.depth, clamp.via) == ("src/util.py", 3, "read_pool_size")

    shallow = expand_call_graph(
        seeds("start_app"), Viewer(), ExpansionLimits(depth=1, max_callers=0)
    )
    assert {s.symbol for s in shallow} == {"configure_pool", "serve"}


def test_expansion_is_bounded_and_never_repeats_a_retrieved_chunk(shop) -> None:
    start = seeds("start_app", "configure_pool")
    added = expand_call_graph(
        start, Viewer(), ExpansionLimits(depth=4, max_callees=2, max_callers=0)
    )
    assert len(added) == 2
    assert not {s.chunk_id for s in added} & {s.chunk_id for s in start}


def test_callers_come_from_the_calls_index_and_tests_only_for_tests(shop) -> None:
    added = expand_call_graph(
        seeds("configure_pool"), Viewer(), ExpansionLimits(depth=0, max_callers=3)
    )
    assert [(s.symbol, s.origin, s.via) for s in added] == [
        ("start_app", "caller", "configure_pool")
    ]


def test_a_definition_in_the_same_file_wins_over_one_elsewhere(shop) -> None:
    from indexing.services.storing import store_files
    from tests.factories import Piece, SourceDoc, to_store

    # A second, unrelated read_pool_size in another package of the same generation.
    other = to_store(
        SourceDoc("vendor/other.py", [Piece("def read_pool_size():\n    pass", "read_pool_size")])
    )
    store_files(shop.pk, shop.active_generation, [other])
    added = expand_call_graph(
        seeds("configure_pool"), Viewer(), ExpansionLimits(depth=1, max_callers=0)
    )
    chosen = next(s for s in added if s.symbol == "read_pool_size")
    assert chosen.path == "src/pool.py"


def test_ask_with_expand_marks_expansion_snippets(shop, chat_model) -> None:
    chat_model.chat_handler = lambda messages: "Start [1], then the pool [2]."
    body = (
        token_client()
        .post(
            "/api/ask",
            {"question": "what does start_app do", "k": 1, "expand": True},
            format="json",
        )
        .json()
    )
    origins = {s["symbol"]: (s["origin"], s["via"]) for s in body["snippets"]}
    assert origins["start_app"] == ("search", "")
    assert origins["configure_pool"] == ("callee", "start_app")
    assert any(t["name"] == "callgraph" and t["status"] == "ran" for t in body["trace"])
    prompt = chat_model.requests_to("/api/chat")[-1].body["messages"][-1]["content"]
    assert "definition called from start_app (call-graph expansion)" in prompt


def test_hyde_searches_with_the_models_snippet_and_fuses_it(shop, chat_model) -> None:
    def reply(messages: list[dict[str, Any]]) -> str:
        if "hypothetical" in messages[0]["content"] or "plausible code" in messages[0]["content"]:
            return "```python\ndef compute_delay(attempt):\n    return 2 ** attempt\n```"
        return "Exponential [1]."

    chat_model.chat_handler = reply
    body = (
        token_client()
        .post("/api/ask", {"question": "how long between tries", "hyde": True}, format="json")
        .json()
    )
    hyde = next(t for t in body["trace"] if t["name"] == "hyde")
    assert hyde["status"] == "ran", hyde
    assert hyde["detail"]["snippet"].startswith("def compute_delay")
    assert "compute_delay" in [s["symbol"] for s in body["snippets"]][:3]
    assert len(chat_model.requests_to("/api/chat")) == 2


def test_hyde_without_a_chat_model_falls_back_to_the_question(shop, chat_model) -> None:
    chat_model.stop()
    snippets, trace = retrieve_for_evaluation("how is the retry delay computed", hyde=True)
    assert snippets
    hyde = next(t for t in trace if t.name == "hyde")
    assert hyde.status == "skipped" and "model unavailable" in hyde.reason


def test_hyde_keeps_to_its_time_budget_and_the_answer_still_comes(
    shop, chat_model, settings
) -> None:
    settings.REPO_SEARCH_HYDE_TIMEOUT_SECS = 0.3
    chat_model.fail_next("slow", times=1, delay=3)  # the draft snippet: slower than its budget
    chat_model.queue_chat("The delay is computed by compute_delay [1].")  # (taken by the answer)
    body = (
        token_client()
        .post(
            "/api/ask", {"question": "how is the retry delay computed", "hyde": True}, format="json"
        )
        .json()
    )
    hyde = next(t for t in body["trace"] if t["name"] == "hyde")
    assert hyde["status"] == "skipped" and "0.3s" in hyde["reason"], hyde
    assert body["answered"] and "compute_delay" in body["answer"]["text"]


QUESTIONS = [
    "where is the connection pool configured?",
    "how is the retry delay computed?",
    "what clamps the pool size?",
    "what does start_app do?",
    "which test covers the pool?",
    "how many attempts does retry make?",
]


def test_every_citation_of_every_answer_resolves_to_a_context_chunk(shop, chat_model) -> None:
    calls = {"n": 0}

    def unruly(messages: list[dict[str, Any]]) -> str:
        # Cites real numbers, out-of-range ones and ranges, differently on every call.
        calls["n"] += 1
        n = calls["n"]
        return f"See [{n % 3 + 1}], [{n + 40}] and [1-{n % 4 + 1}][0]; also [2, {n * 7}]."

    chat_model.chat_handler = unruly
    check = check_citations(QUESTIONS, expand=True)
    assert check.questions == check.answered == len(QUESTIONS)
    assert check.failures == []
    assert check.rate == 1.0
    assert check.citations > len(QUESTIONS)
    assert check.removed == len(QUESTIONS)  # every answer had an invented number removed
