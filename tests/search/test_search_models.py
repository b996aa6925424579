"""Expansion and rerank through a real HTTP model server: success, and a server that is down,
slow or answers garbage (the search still answers; the trace says why)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from search.executor import SearchExecutor, SearchRequest, SearchResult
from search.types import SearchTuning
from tests.model_server import ModelServer
from tests.search.corpus import Piece, SourceDoc, indexed_repository, no_chat, server_chat

pytestmark = pytest.mark.django_db

DOCS = [
    SourceDoc(
        "img/resize.py",
        [
            Piece(
                "def thumbnail(image, width):\n    # resize image\n    return image.resize(width)\n",
                "thumbnail",
            )
        ],
    ),
    SourceDoc(
        "img/crop.py",
        [
            Piece(
                "def crop(image, box):\n    # image crop, image box\n    return image.crop(box)\n",
                "crop",
            )
        ],
    ),
    SourceDoc(
        "img/rotate.py",
        [Piece("def rotate(image, angle):\n    return image.rotate(angle)\n", "rotate")],
    ),
    SourceDoc(
        "text/slug.py", [Piece("def slugify(title):\n    return title.lower()\n", "slugify")]
    ),
]


@pytest.fixture(autouse=True)
def corpus() -> None:
    indexed_repository("models", DOCS)


def run(chat: Any, query: str = "image crop", **options: Any) -> SearchResult:
    request = SearchRequest(query=query, use_vector=False, **options)
    return SearchExecutor(chat=chat).run(request)


def stage(result: SearchResult, name: str) -> tuple[str, str]:
    found = result.stage(name)
    assert found is not None
    return found.status, found.reason


def judge_thumbnail_relevant(messages: list[dict[str, Any]]) -> str:
    relevant = "thumbnail" in messages[-1]["content"]
    return json.dumps({"relevant": relevant, "confidence": 0.9})


def test_expansion_adds_the_alternatives_as_queries(model_server: ModelServer) -> None:
    model_server.queue_chat('```json\n["make a thumbnail of a picture", "slugify a title"]\n```')
    result = run(server_chat(model_server.url), "image crop", use_expansion=True)
    assert result.queries == ["image crop", "make a thumbnail of a picture", "slugify a title"]
    assert stage(result, "expansion") == ("ran", "")
    # The expansions' lists found what the original could not.
    assert {"crop", "thumbnail", "slugify"} <= {h.symbol for h in result.hits}
    fulltext = result.stage("fulltext")
    assert fulltext is not None and len(fulltext.detail["queries"]) == 3


def test_rerank_reorders_and_scores(model_server: ModelServer) -> None:
    model_server.chat_handler = judge_thumbnail_relevant
    result = run(server_chat(model_server.url), "image", use_rerank=True)
    assert stage(result, "rerank") == ("ran", "")
    assert stage(result, "blend")[0] == "ran"
    scores = {h.symbol: h.rerank_score for h in result.hits}
    assert scores == {"thumbnail": 0.9, "crop": pytest.approx(0.1), "rotate": pytest.approx(0.1)}
    best = max(h.fusion_score for h in result.hits)
    for hit in result.hits:  # ranks 1-3 keep 75 % of the (normalised) fusion score
        expected = 0.75 * hit.fusion_score / best + 0.25 * scores[hit.symbol]
        assert hit.combined_score == pytest.approx(expected)
    assert len(model_server.requests_to("/api/chat")) == 3  # one per candidate


def test_no_chat_model_configured() -> None:
    result = run(no_chat(), use_expansion=True, use_rerank=True)
    assert stage(result, "expansion") == ("skipped", "no chat model configured")
    assert stage(result, "rerank") == ("skipped", "no chat model configured")
    assert result.hits[0].symbol == "crop"


def test_chat_server_down(model_server: ModelServer) -> None:
    chat = server_chat(model_server.url)
    model_server.stop()
    result = run(chat, use_expansion=True, use_rerank=True)
    status, reason = stage(result, "expansion")
    assert status == "skipped" and "chat model unavailable" in reason
    status, reason = stage(result, "rerank")
    assert status == "skipped" and "chat model unavailable" in reason
    assert [h.symbol for h in result.hits][:1] == ["crop"]
    assert all(h.rerank_score is None for h in result.hits)


def test_chat_server_too_slow_for_the_budget(model_server: ModelServer) -> None:
    model_server.delay = 3.0
    result = run(
        server_chat(model_server.url, timeout=10),
        use_rerank=True,
        tuning=SearchTuning(rerank_budget_s=0.5),
    )
    status, reason = stage(result, "rerank")
    assert status == "skipped"
    assert reason.startswith("chat model timed out after 0.5 s (")
    assert reason.endswith("); the fusion order stands")
    detail = result.stage("rerank").detail  # type: ignore[union-attr]
    # Every candidate is accounted for: still waiting on the model or timed out, none judged
    # and none counted as unreachable (the server was there, only slow).
    assert (detail["judged"], detail["unreachable"]) == (0, 0), detail
    assert detail["in_flight"] + detail["timed_out"] + detail["not_started"] == 3, detail
    assert f"{detail['in_flight']} still waiting on the model" in reason
    assert result.hits[0].symbol == "crop" and result.hits[0].rerank_score is None


def test_expansion_timeout(model_server: ModelServer) -> None:
    model_server.delay = 3.0
    result = run(
        server_chat(model_server.url),
        use_expansion=True,
        tuning=SearchTuning(expansion_timeout_s=0.5),
    )
    status, reason = stage(result, "expansion")
    assert status == "skipped" and "timeout 0.5 s" in reason
    assert result.queries == ["image crop"] and result.hits


def test_partial_rerank_blends_only_the_judged(model_server: ModelServer) -> None:
    model_server.chat_handler = judge_thumbnail_relevant
    # The first request hangs past the budget; the others answer.
    model_server.fail_next("slow", times=1, delay=3.0)
    result = run(
        server_chat(model_server.url, timeout=10),
        "image",
        use_rerank=True,
        tuning=SearchTuning(rerank_budget_s=1.5, rerank_concurrency=2),
    )
    status, reason = stage(result, "rerank")
    assert status == "ran"
    assert "the 1.5 s budget ran out" in reason
    assert "2 of 3 candidates judged" in reason
    judged = [h for h in result.hits if h.rerank_score is not None]
    unjudged = [h for h in result.hits if h.rerank_score is None]
    assert len(judged) == 2 and len(unjudged) == 1
    # The unjudged candidate keeps its normalised fusion score alone.
    best = max(h.fusion_score for h in result.hits)
    assert unjudged[0].combined_score == pytest.approx(unjudged[0].fusion_score / best)


@pytest.mark.parametrize(
    ("answer", "expansion_reason", "rerank_status"),
    [
        ("%%% ### !!!", "the chat model's answer held no usable phrasing", "failed"),
        ("", "the chat model's answer held no usable phrasing", "failed"),
    ],
)
def test_garbage_answers(
    model_server: ModelServer, answer: str, expansion_reason: str, rerank_status: str
) -> None:
    model_server.chat_handler = lambda messages: answer
    result = run(server_chat(model_server.url), use_expansion=True, use_rerank=True)
    assert stage(result, "expansion") == ("failed", expansion_reason)
    status, reason = stage(result, "rerank")
    assert status == rerank_status and "no yes/no verdict" in reason
    assert result.hits[0].symbol == "crop"


def test_garbage_on_the_wire(model_server: ModelServer) -> None:
    model_server.fail_next("garbage", times=10)
    result = run(server_chat(model_server.url), use_expansion=True, use_rerank=True)
    status, reason = stage(result, "expansion")
    assert status == "failed" and reason.startswith("chat model error")
    status, reason = stage(result, "rerank")
    assert status == "failed" and reason.startswith("chat model error")
    assert result.hits[0].symbol == "crop"
