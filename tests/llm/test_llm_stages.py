"""Query expansion and rerank asking for constrained JSON, reading what comes back, and falling
back (unexpanded query, fusion order) with the stage report saying so -- against the
wire-protocol test server, both protocols."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm import get_chat
from llm.config import ModelSettings
from search.executor import SearchExecutor, SearchRequest, SearchResult
from search.ranking.rerank import VERDICT_SCHEMA
from search.retrieval.expansion import expansion_schema
from search.types import SearchTuning
from tests.model_server import ModelServer
from tests.search.corpus import Piece, SourceDoc, indexed_repository

pytestmark = pytest.mark.django_db

DOCS = [
    SourceDoc(
        "img/resize.py",
        [Piece("def thumbnail(image, width):\n    return image.resize(width)\n", "thumbnail")],
    ),
    SourceDoc(
        "img/crop.py",
        [Piece("def crop(image, box):\n    # image crop\n    return image.crop(box)\n", "crop")],
    ),
    SourceDoc(
        "img/rotate.py",
        [Piece("def rotate(image, angle):\n    return image.rotate(angle)\n", "rotate")],
    ),
]


@pytest.fixture(autouse=True)
def corpus() -> None:
    indexed_repository("stages", DOCS)


def chat_for(server: ModelServer, provider: str = "ollama", **kw: Any) -> Any:
    return get_chat(
        ModelSettings(
            chat_provider=provider,
            chat_model="llama3.2",
            base_url=server.url,
            timeout=5.0,
            connect_timeout=1.0,
            max_retries=0,
            **kw,
        )
    )


def run(chat: Any, query: str = "image", **options: Any) -> SearchResult:
    return SearchExecutor(chat=chat).run(SearchRequest(query=query, use_vector=False, **options))


def stage(result: SearchResult, name: str) -> Any:
    found = result.stage(name)
    assert found is not None
    return found


CHAT_PATHS = {"ollama": "/api/chat", "openai": "/v1/chat/completions"}


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_expansion_asks_for_the_schema_and_searches_the_phrasings(
    model_server: ModelServer, provider: str
) -> None:
    model_server.queue_chat('{"queries": ["image crop box", "crop"]}')
    result = run(chat_for(model_server, provider), use_expansion=True)
    expansion = stage(result, "expansion")
    assert (expansion.status, expansion.detail["parsed_from"]) == ("ran", "json")
    assert result.queries == ["image", "image crop box", "crop"]
    body = model_server.requests_to(CHAT_PATHS[provider])[-1].body
    if provider == "ollama":
        assert body["format"] == expansion_schema(2)
    else:
        assert body["response_format"]["json_schema"]["schema"] == expansion_schema(2)


def test_expansion_reads_numbered_lines_when_the_model_ignores_json(
    model_server: ModelServer,
) -> None:
    model_server.queue_chat("Sure! Here you go:\n1. crop image box\n2. rotate an image")
    result = run(chat_for(model_server), use_expansion=True)
    expansion = stage(result, "expansion")
    assert (expansion.status, expansion.detail["parsed_from"]) == ("ran", "lines")
    assert result.queries == ["image", "crop image box", "rotate an image"]


@pytest.mark.parametrize(
    "answer", ['{"queries": ["image", "IMAGE"]}', '{"queries": []}', "", "```\n```"]
)
def test_unusable_expansions_leave_the_original_query_and_say_so(
    model_server: ModelServer, answer: str
) -> None:
    model_server.queue_chat(answer)
    result = run(chat_for(model_server), use_expansion=True)
    expansion = stage(result, "expansion")
    assert expansion.status == "failed"
    assert expansion.reason == "the chat model's answer held no usable phrasing"
    assert expansion.detail["fallback"] == "the original query only"
    assert result.queries == ["image"]
    assert [h.symbol for h in result.hits]  # the search still answered


def test_rerank_asks_for_the_verdict_schema_and_counts_how_it_read_them(
    model_server: ModelServer,
) -> None:
    def judge(messages: list[dict[str, Any]]) -> str:
        if "rotate" in messages[-1]["content"]:
            return "Yes, relevant."  # prose: read by keyword
        return json.dumps({"relevant": "crop" in messages[-1]["content"], "confidence": 0.9})

    model_server.chat_handler = judge
    result = run(chat_for(model_server), use_rerank=True)
    rerank = stage(result, "rerank")
    assert rerank.status == "ran"
    assert rerank.detail["parsed_json"] == 2 and rerank.detail["parsed_keyword"] == 1
    assert rerank.detail["judged"] == rerank.detail["candidates"] == 3
    assert all(r.body["format"] == VERDICT_SCHEMA for r in model_server.requests_to("/api/chat"))
    assert result.hits[0].symbol == "crop"


def test_unreadable_verdicts_keep_the_fusion_order_and_say_so(model_server: ModelServer) -> None:
    plain = run(chat_for(model_server))
    model_server.chat_handler = lambda messages: "Hmm, hard to tell."
    result = run(chat_for(model_server), use_rerank=True)
    rerank = stage(result, "rerank")
    assert rerank.status == "failed" and "no yes/no verdict" in rerank.reason
    assert rerank.detail["unreadable"] == rerank.detail["candidates"] == 3
    assert [h.symbol for h in result.hits] == [h.symbol for h in plain.hits]
    assert all(h.rerank_score is None for h in result.hits)


def test_rerank_threads_follow_the_call_limit_and_snippets_the_context_window(
    model_server: ModelServer, settings: Any
) -> None:
    settings.LLM_MAX_CONCURRENT_CALLS = 1
    model_server.delay = 0.05  # long enough for overlapping calls to show up at the server
    model_server.chat_handler = lambda messages: '{"relevant": true, "confidence": 0.7}'
    chat = chat_for(model_server, context_tokens=400)
    result = run(
        chat, use_rerank=True, tuning=SearchTuning(rerank_concurrency=4, rerank_budget_s=10)
    )
    rerank = stage(result, "rerank")
    assert rerank.status == "ran" and rerank.detail["judged"] == 3
    assert rerank.detail["concurrency"] == 1
    assert model_server.max_in_flight == 1  # one call at a time reached the model server
    assert rerank.detail["snippet_chars"] == 480  # (400 - 200 - 40) tokens x 3 characters
