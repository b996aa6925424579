"""The LLM stages against a REAL model server: llama.cpp's OpenAI-compatible server running
SmolLM2-135M-Instruct on this machine's CPU (``tests.llama_server``), reached through our own
``openai`` provider. The fake server (``tests.model_server``) proves the protocol's corners; this
tier proves what only a real, slow, small model shows: its wording is parsed or the stage falls
back and says why, budgets hold against real slowness, and answers cite real chunks.

Bounded: one server process for the session (a 2,048-token context, as ``LLM_CONTEXT_TOKENS``
tells the app), small answers, a handful of calls. Asserts what a user sees (results, trace,
citations, the order of streamed events), never the model's wording or its speed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import llm
import llm.config
from indexing.models import Chunk
from tests.accounts_support import bearer, make_account, token_client, token_for
from tests.asgi_server import serving_the_site
from tests.ask import corpus, test_ask_stream
from tests.ask.test_ask_stream import read_events
from tests.llama_server import LlamaServer, missing

pytestmark = [pytest.mark.real_model, pytest.mark.django_db]

QUESTION = "where is the connection pool configured?"
CONTEXT_TOKENS = 2048
shop = corpus.shop  # the fixture: a small indexed repository with real local vectors
committed_shop = test_ask_stream.committed_shop  # the same, committed (for the served site)


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    reason = missing()
    if reason:
        pytest.skip(f"no real model server: {reason}")
    server = LlamaServer(n_ctx=CONTEXT_TOKENS).start()
    # The first answer of a fresh server is slow (loading, first allocations): not a test's.
    httpx.post(
        f"{server.url}/chat/completions",
        json={
            "model": server.model,
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 4,
        },
        timeout=120,
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def real_chat(llama_server: LlamaServer, settings: Any) -> Iterator[LlamaServer]:
    """The app's chat model is the real server, through the ``openai`` provider."""
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = llama_server.url
    settings.LLM_CHAT_MODEL = llama_server.model
    settings.LLM_EMBEDDING_PROVIDER = "local"
    settings.LLM_CONTEXT_TOKENS = CONTEXT_TOKENS
    llm.config.invalidate()
    yield llama_server
    llm.config.invalidate()


def search(**body: Any) -> dict[str, Any]:
    response = token_client().post("/api/search", {"limit": 10, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def stage(body: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in body["trace"] if s["name"] == name)


def where(hit: dict[str, Any]) -> tuple[str, int]:
    return hit["file_path"], hit["start_line"]


def assert_valid_hits(body: dict[str, Any], shop: Any) -> None:
    """Every hit is a distinct live chunk of the repository, located as its row says."""
    hits = body["results"]
    assert hits, body
    assert len(set(map(where, hits))) == len(hits)
    for hit in hits:
        row = Chunk.objects.get(
            repository=shop, path=hit["file_path"], start_line=hit["start_line"]
        )
        assert (row.end_line, row.symbol) == (hit["end_line"], hit["symbol"])


def test_chat_answers_with_text_through_the_openai_provider(real_chat) -> None:
    chat = llm.get_chat()
    assert chat.provider == "openai"
    chat.ping(timeout=10)  # the server lists the model under the name we ask for
    answer = chat.chat(
        [{"role": "user", "content": "Say hello in one word."}], max_tokens=8, timeout=60
    )
    assert isinstance(answer, str) and answer.strip()


def test_expansion_parses_the_real_answer_or_says_why_not(shop, real_chat) -> None:
    body = search(query=QUESTION, use_expansion=True)
    assert_valid_hits(body, shop)
    expansion = stage(body, "expansion")
    if expansion["status"] == "ran":
        # Asked under a JSON schema (llama.cpp turns it into a grammar): read as JSON.
        assert expansion["detail"]["parsed_from"] == "json"
        alternatives = expansion["detail"]["alternatives"]
        assert alternatives and all(a.strip() and a != QUESTION for a in alternatives)
        assert body["queries"] == [QUESTION, *alternatives]
        searched = [q["query"] for q in stage(body, "fulltext")["detail"]["queries"]]
        assert searched == body["queries"]
    else:  # the model's words held no phrasing, or it was too slow: the trace says which
        assert expansion["status"] in ("failed", "skipped")
        assert expansion["reason"]
        assert body["queries"] == [QUESTION]


def test_rerank_gives_a_valid_order_and_true_counts(shop, real_chat) -> None:
    plain = search(query=QUESTION)
    body = search(query=QUESTION, use_rerank=True)
    assert_valid_hits(body, shop)
    rerank = stage(body, "rerank")
    judged = [h for h in body["results"] if h["rerank_score"] is not None]
    assert sorted(map(where, body["results"])) == sorted(map(where, plain["results"]))
    assert rerank["detail"]["judged"] == len(judged)
    outcomes = ("judged", "unreadable", "late", "timed_out", "unreachable", "errors", "busy")
    accounted = sum(rerank["detail"][name] for name in (*outcomes, "in_flight", "not_started"))
    assert accounted == rerank["detail"]["candidates"] > 0, rerank  # every candidate's fate
    assert all(0.0 <= h["rerank_score"] <= 1.0 for h in judged)
    # The schema holds the model to {"relevant", "confidence"}: no verdict needed guessing.
    assert rerank["detail"]["parsed_keyword"] == 0 and rerank["detail"]["unreadable"] == 0
    if rerank["status"] != "ran":  # nothing judged in the budget: the fusion order stands
        assert rerank["reason"] and not judged
        assert list(map(where, body["results"])) == list(map(where, plain["results"]))
    elif len(judged) < rerank["detail"]["candidates"]:
        total = rerank["detail"]["candidates"]
        assert f"{len(judged)} of {total} candidates judged" in rerank["reason"]


def test_ask_with_hyde_cites_real_chunks_or_fails_with_the_sources(
    shop, real_chat, settings
) -> None:
    # Room for a CPU model to write a whole answer (the defaults cap it at LLM_TIMEOUT_SECS 30).
    settings.LLM_TIMEOUT_SECS = settings.REPO_SEARCH_ASK_TIMEOUT_SECS = 90.0
    llm.config.invalidate()
    response = token_client().post(
        "/api/ask", {"question": QUESTION, "hyde": True, "k": 4}, format="json"
    )
    assert response.status_code in (200, 502, 503), response.content
    body = response.json()
    if response.status_code != 200:  # an honest failure still says where to look
        assert body["error"]["code"] in ("model_unavailable", "model_bad_response"), body
        sources = body["error"]["details"]["sources"]
        assert sources and all(s["path"].startswith(("src/", "tests/")) for s in sources)
        trace = body["error"]["details"]["trace"]
    else:
        assert body["answered"] and body["answer"]["text"].strip()
        for source in body["sources"]:  # every citation resolved from the chunk's own row
            row = Chunk.objects.get(
                repository=shop, path=source["path"], start_line=source["start_line"]
            )
            assert source["end_line"] == row.end_line
            assert source["commit"] == shop.last_indexed_commit
        cited = [s["number"] for s in body["sources"]]
        assert cited == sorted(set(cited), key=cited.index)
        assert all(1 <= n <= len(body["snippets"]) for n in cited)
        trace = body["trace"]
    hyde = next(t for t in trace if t["name"] == "hyde")
    if hyde["status"] == "ran":
        assert hyde["detail"]["snippet"].strip() and hyde["detail"]["hits"] > 0
    else:
        assert hyde["reason"]


def test_a_timeout_shorter_than_the_model_needs_leaves_the_search_answering(
    shop, real_chat, settings
) -> None:
    chat = llm.get_chat()
    messages = [{"role": "user", "content": "List three synonyms of 'configure', as JSON."}]
    started = time.monotonic()
    chat.chat(messages, max_tokens=40, timeout=60)
    needed = time.monotonic() - started
    settings.LLM_TIMEOUT_SECS = max(0.05, needed / 4)  # real slowness: a quarter of that
    llm.config.invalidate()

    body = search(query=QUESTION, use_expansion=True)
    assert_valid_hits(body, shop)
    expansion = stage(body, "expansion")
    assert expansion["status"] == "skipped", expansion
    assert "read timeout" in expansion["reason"] or "timed out" in expansion["reason"]
    assert body["queries"] == [QUESTION]
    assert stage(body, "fulltext")["status"] == "ran"
    assert stage(body, "vector")["status"] == "ran"


def test_a_streamed_ask_shows_the_sources_then_the_words_then_checked_citations(
    committed_shop, real_chat, settings, monkeypatch
) -> None:
    settings.REPO_SEARCH_ASK_TIMEOUT_SECS = 90.0
    headers = {"Accept": "text/event-stream", **bearer(token_for(make_account("read")))}
    with (
        serving_the_site(monkeypatch) as site,
        httpx.stream(
            "POST",
            f"{site}/api/ask",
            json={"question": QUESTION, "k": 4},
            headers=headers,
            timeout=120,
        ) as response,
    ):
        assert response.status_code == 200
        events = list(read_events(response))
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] in ("done", "error"), names
    assert set(names[1:-1]) <= {"delta"}
    assert events[0][1]["snippets"]
    last = events[-1][1]
    if names[-1] == "error":  # an honest failure, in the one error shape, with the sources
        assert last["error"]["code"] in ("model_unavailable", "model_bad_response", "model_busy")
        assert last["error"]["details"]["sources"]
        return
    raw = "".join(data["text"] for name, data in events if name == "delta")
    assert names.count("delta") >= 1 and last["answer"]["raw"] == raw
    answer = next(t for t in last["trace"] if t["name"] == "answer")
    assert answer["detail"]["context_tokens"] == CONTEXT_TOKENS
    assert answer["detail"]["prompt_tokens_estimate"] <= CONTEXT_TOKENS
    assert 0 < last["timings"]["first_token_ms"] <= last["timings"]["model_ms"]
    for source in last["sources"]:  # every citation resolved from the chunk's own row
        row = Chunk.objects.get(
            repository=committed_shop, path=source["path"], start_line=source["start_line"]
        )
        assert source["end_line"] == row.end_line
