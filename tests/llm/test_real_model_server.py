"""The LLM stages against a REAL model server: llama.cpp's OpenAI-compatible server running
SmolLM2-135M-Instruct on this machine's CPU (``tests.llama_server``), reached through our own
``openai`` provider. The fake server (``tests.model_server``) proves the protocol's corners; this
tier proves what only a real, slow, small model shows: its wording is parsed or the stage falls
back and says why, budgets hold against real slowness, and answers cite real chunks.

Bounded: one server process for the session (a 2,048-token context, as ``LLM_CONTEXT_TOKENS``
tells the app), small answers, a handful of calls. Asserts what a user sees (results, trace,
citations, the order of streamed events), never the model's wording or its speed: each stage
gets a budget a busy core cannot miss (``GENEROUS_S``) and must then do its work -- phrasings
read and searched, every candidate judged, an answer written over real chunks -- instead of
passing on its fallback; the fallback has a test of its own (a timeout shorter than the model
needs), and the model's answers are greedy (temperature 0), so a run repeats.
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
from search.executor import SearchExecutor, SearchRequest
from search.types import SearchHit, SearchResult, SearchTuning
from tests.accounts_support import bearer, make_account, token_client, token_for
from tests.asgi_server import serving_the_site
from tests.ask import corpus, test_ask_stream
from tests.ask.test_ask_stream import read_events
from tests.llama_server import LlamaServer, missing

pytestmark = [pytest.mark.real_model, pytest.mark.django_db, pytest.mark.timeout(600)]

QUESTION = "where is the connection pool configured?"
CONTEXT_TOKENS = 2048
GENEROUS_S = 120.0  # a stage's budget: the model's speed on a busy core is not under test
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


def run_search(**fields: Any) -> SearchResult:
    """The search pipeline itself, for the fields the API does not take (stage budgets)."""
    return SearchExecutor().run(SearchRequest(query=QUESTION, limit=10, **fields))


def assert_real_hits(hits: list[SearchHit], shop: Any) -> None:
    """Every hit is a distinct live chunk of the repository, located as its row says."""
    assert hits
    assert len({(h.file_path, h.start_line) for h in hits}) == len(hits)
    for hit in hits:
        row = Chunk.objects.get(pk=hit.chunk_id)
        assert (row.repository_id, row.path, row.start_line, row.end_line, row.symbol) == (
            shop.pk, hit.file_path, hit.start_line, hit.end_line, hit.symbol
        )  # fmt: skip


def assert_real_snippets(body: dict[str, Any], shop: Any) -> None:
    """The answer's context (the snippets the page lists) is live chunks of the repository at
    its indexed commit, and every citation names one of them."""
    assert body["snippets"], body
    for snippet in body["snippets"]:
        row = Chunk.objects.get(
            repository=shop, path=snippet["path"], start_line=snippet["start_line"]
        )
        assert snippet["end_line"] == row.end_line
        assert snippet["commit"] == shop.last_indexed_commit
    for source in body["sources"]:  # what the model cited, resolved from the chunk's own row
        row = Chunk.objects.get(
            repository=shop, path=source["path"], start_line=source["start_line"]
        )
        assert source["end_line"] == row.end_line
        assert source["commit"] == shop.last_indexed_commit
    cited = [s["number"] for s in body["sources"]]
    assert cited == sorted(set(cited), key=cited.index)
    assert all(1 <= n <= len(body["snippets"]) for n in cited)


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


def test_expansion_reads_the_real_phrasings_and_searches_them(shop, real_chat) -> None:
    result = run_search(use_expansion=True, tuning=SearchTuning(expansion_timeout_s=GENEROUS_S))
    expansion = result.stage("expansion")
    assert expansion is not None and expansion.status == "ran", expansion
    # Asked under a JSON schema (llama.cpp turns it into a grammar): read as JSON.
    assert expansion.detail["parsed_from"] == "json"
    alternatives = expansion.detail["alternatives"]
    assert alternatives and all(a.strip() and a != QUESTION for a in alternatives)
    assert result.queries == [QUESTION, *alternatives]
    fulltext = result.stage("fulltext")
    assert fulltext is not None
    assert [q["query"] for q in fulltext.detail["queries"]] == result.queries
    assert_real_hits(result.hits, shop)


def test_rerank_judges_every_candidate_and_orders_by_its_verdicts(shop, real_chat) -> None:
    plain = run_search()
    result = run_search(
        use_rerank=True, tuning=SearchTuning(rerank_top=4, rerank_budget_s=GENEROUS_S)
    )
    rerank = result.stage("rerank")
    assert rerank is not None and rerank.status == "ran", rerank
    detail = rerank.detail
    assert detail["candidates"] == detail["judged"] == 4, detail  # every candidate's verdict
    # The schema holds the model to {"relevant", "confidence"}: no verdict needed guessing.
    assert detail["parsed_json"] == 4 and detail["parsed_keyword"] == detail["unreadable"] == 0
    judged = [h for h in result.hits if h.rerank_score is not None]
    assert len(judged) == 4 and all(0.0 <= h.rerank_score <= 1.0 for h in judged)  # type: ignore[operator]
    # The same chunks as without rerank, now in the order of the blend of both.
    assert sorted(h.chunk_id for h in result.hits) == sorted(h.chunk_id for h in plain.hits)
    scores = [h.combined_score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    assert_real_hits(result.hits, shop)


def test_ask_with_hyde_answers_over_real_chunks(shop, real_chat, settings) -> None:
    # Room for a CPU model (the defaults cap ask at LLM_TIMEOUT_SECS 30, HyDE at 20 s).
    settings.LLM_TIMEOUT_SECS = settings.REPO_SEARCH_ASK_TIMEOUT_SECS = GENEROUS_S
    settings.REPO_SEARCH_HYDE_TIMEOUT_SECS = GENEROUS_S
    llm.config.invalidate()
    response = token_client().post(
        "/api/ask", {"question": QUESTION, "hyde": True, "k": 4}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["answered"] and body["answer"]["text"].strip()
    assert_real_snippets(body, shop)
    hyde = next(t for t in body["trace"] if t["name"] == "hyde")
    assert hyde["status"] == "ran", hyde  # the model's hypothetical code was searched too
    assert hyde["detail"]["snippet"].strip() and hyde["detail"]["hits"] > 0


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
    settings.LLM_TIMEOUT_SECS = settings.REPO_SEARCH_ASK_TIMEOUT_SECS = GENEROUS_S
    headers = {"Accept": "text/event-stream", **bearer(token_for(make_account("read")))}
    with (
        serving_the_site(monkeypatch) as site,
        httpx.stream(
            "POST",
            f"{site}/api/ask",
            json={"question": QUESTION, "k": 4},
            headers=headers,
            timeout=GENEROUS_S + 60,
        ) as response,
    ):
        assert response.status_code == 200
        events = list(read_events(response))
    names = [name for name, _ in events]
    # The sources first, then the model's words as it writes them, then the whole answer.
    assert names[0] == "sources" and names[-1] == "done", events[-1]
    assert set(names[1:-1]) == {"delta"}
    assert events[0][1]["snippets"]
    last = events[-1][1]
    raw = "".join(data["text"] for name, data in events if name == "delta")
    assert raw.strip() and last["answered"] and last["answer"]["raw"] == raw
    assert last["snippets"] == events[0][1]["snippets"]  # the sources shown first are the context
    answer = next(t for t in last["trace"] if t["name"] == "answer")
    assert answer["detail"]["context_tokens"] == CONTEXT_TOKENS
    assert answer["detail"]["prompt_tokens_estimate"] <= CONTEXT_TOKENS
    assert 0 < last["timings"]["first_token_ms"] <= last["timings"]["model_ms"]
    assert_real_snippets(last, committed_shop)
