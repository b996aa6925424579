"""The local cross-encoder stage: the real ms-marco model reorders the best fused candidates,
within its budget, and says what it did in the trace."""

from __future__ import annotations

from typing import Any

import pytest

from llm.onnx_models import get_cross_encoder
from search.executor import SearchExecutor
from search.ranking.cross_encoder import (
    Passage,
    clear_cache,
    cross_encode,
    passage_tokens,
    reordered,
)
from search.ranking.fusion import FusedCandidate
from search.types import SearchRequest, SearchTuning
from tests.search.corpus import Piece, SourceDoc, indexed_repository

QUESTION = "how do I stop the upload when the user cancels it"
# Every passage shares the question's words; only the first answers it.
ANSWER = Passage(
    1,
    "uploads/cancel.py cancel_upload\n"
    "def cancel_upload(upload):\n"
    "    '''Stop a running upload when the user cancels it: abort the transfer.'''\n"
    "    upload.transfer.abort()\n",
)
DECOYS = [
    Passage(2, "uploads/log.py log_upload\ndef log_upload(user, upload):\n    log(user, upload)\n"),
    Passage(3, "users/cancel.py cancel_user\ndef cancel_user(user):\n    user.delete()\n"),
    Passage(4, "uploads/size.py upload_size\ndef upload_size(upload):\n    return upload.n\n"),
]


@pytest.fixture(autouse=True)
def _no_cached_scores() -> None:
    clear_cache()


def test_the_answer_moves_up_and_the_mix_keeps_a_strong_fusion_first() -> None:
    model = get_cross_encoder()
    passages = [*DECOYS, ANSWER]  # the answer came last out of fusion
    pure = cross_encode(model, QUESTION, passages, budget_s=30, max_tokens=256, weight=1.0)
    assert pure.status == "ran" and pure.order[0] == ANSWER.chunk_id
    assert pure.detail["scored"] == 4 and pure.detail["moved"] >= 2
    none = cross_encode(model, QUESTION, passages, budget_s=30, max_tokens=256, weight=0.0)
    assert none.order == [2, 3, 4, 1]  # weight 0: the fusion order stands
    half = cross_encode(model, QUESTION, passages, budget_s=30, max_tokens=256, weight=0.5)
    assert half.order.index(1) < 3  # it gains places without taking the first for sure


def test_a_spent_budget_keeps_the_fusion_order_and_says_so() -> None:
    model = get_cross_encoder()
    outcome = cross_encode(
        model, QUESTION, [*DECOYS, ANSWER], budget_s=0, max_tokens=256, weight=1.0
    )
    assert outcome.status == "skipped" and outcome.order == []
    assert "budget ran out" in outcome.reason


def test_scores_are_kept_per_query_and_chunk() -> None:
    model = get_cross_encoder()
    first = cross_encode(
        model, QUESTION, [*DECOYS, ANSWER], budget_s=30, max_tokens=256, weight=1.0
    )
    again = cross_encode(model, QUESTION, [*DECOYS, ANSWER], budget_s=0, max_tokens=256, weight=1.0)
    assert again.detail["model_calls"] == 0 and again.detail["cached"] == 4
    assert again.order == first.order and again.scores == first.scores


def test_reordering_moves_places_and_their_scores_together() -> None:
    candidates = [
        FusedCandidate(i, score, rank=i) for i, score in enumerate([0.9, 0.5, 0.4, 0.1], 1)
    ]
    out = reordered(candidates, [3, 1, 2])
    assert [c.chunk_id for c in out] == [3, 1, 2, 4]
    assert [c.score for c in out] == [0.9, 0.5, 0.4, 0.1]  # still descending: one order
    assert [c.rank for c in out] == [3, 1, 2, 4]  # the fusion rank is kept for the answer


@pytest.mark.django_db
def test_a_search_asks_for_it_and_its_trace_says_what_it_did() -> None:
    indexed_repository(
        "uploads",
        [
            SourceDoc(
                "uploads/cancel.py",
                [Piece(ANSWER.text.split("\n", 1)[1], "cancel_upload")],
            ),
            *[
                SourceDoc(p.text.split(" ", 1)[0], [Piece(p.text.split("\n", 1)[1], "f")])
                for p in DECOYS
            ],
        ],
    )
    on = SearchExecutor().run(SearchRequest(query=QUESTION, cross_encoder=True))
    stage = on.stage("cross_encoder")
    assert stage is not None and stage.status == "ran"
    assert stage.detail["scored"] == len(on.hits) == 4
    assert stage.detail["max_tokens"] == 128  # the built-in model's own (docs/benchmarks.md)
    assert on.hits[0].file_path == "uploads/cancel.py"
    named = SearchExecutor().run(SearchRequest(query="cancel_upload", cross_encoder=True))
    named_stage = named.stage("cross_encoder")
    assert named_stage is not None and named_stage.status == "skipped"
    assert named_stage.reason.startswith("an identifier query")
    assert named.hits[0].file_path == "uploads/cancel.py"
    off = SearchExecutor().run(SearchRequest(query=QUESTION, cross_encoder=False))
    off_stage = off.stage("cross_encoder")
    assert off_stage is not None and off_stage.status == "skipped"
    assert off_stage.reason == "not requested"


def server_reranker(url: str) -> Any:
    from llm import get_reranker
    from llm.config import ModelSettings

    cfg = ModelSettings(rerank_provider="server", rerank_model="bge-reranker", base_url=url,
                        max_retries=0, timeout=5.0)  # fmt: skip
    return get_reranker(cfg)


def test_a_rerank_server_scores_every_candidate_in_one_request(model_server: Any) -> None:
    model = server_reranker(model_server.url)
    question = "cancel the upload transfer"
    outcome = cross_encode(
        model, question, [*DECOYS, ANSWER], budget_s=10, max_tokens=64, weight=1.0
    )
    assert outcome.status == "ran" and outcome.order[0] == ANSWER.chunk_id
    (sent,) = model_server.requests_to("/v1/rerank")
    assert sent.body["model"] == "bge-reranker" and sent.body["query"] == question
    assert len(sent.body["documents"]) == 4
    assert all(len(d) <= 64 * 4 for d in sent.body["documents"])  # cut to about 64 tokens


def test_each_model_reads_its_own_length_unless_the_search_says(model_server: Any) -> None:
    server = server_reranker(model_server.url)
    assert passage_tokens(SearchTuning(), get_cross_encoder()) == 128
    assert passage_tokens(SearchTuning(), server) == 256
    assert passage_tokens(SearchTuning(cross_encoder_tokens=64), server) == 64
    long_passage = "def cancel_upload(upload):\n" + "    upload.transfer.abort()\n" * 100
    server.score("cancel the upload", [long_passage, "short"])
    (sent,) = model_server.requests_to("/v1/rerank")
    assert [len(d) for d in sent.body["documents"]] == [256 * 4, len("short")]


def test_a_failing_rerank_server_leaves_the_fusion_order_and_says_why(model_server: Any) -> None:
    model = server_reranker(model_server.url)
    model_server.rerank_answer = {"results": [{"index": 0, "relevance_score": 0.5}]}
    short = cross_encode(model, "cancel", [*DECOYS, ANSWER], budget_s=10, max_tokens=64, weight=1.0)
    assert short.status == "failed" and short.order == []
    assert "left out 3 of 4 documents" in short.reason
    model_server.rerank_answer = None
    model_server.fail_next("500", times=5, path="/v1/rerank")
    down = cross_encode(model, "upload", [*DECOYS, ANSWER], budget_s=10, max_tokens=64, weight=1.0)
    assert down.status == "failed" and "the reranker failed" in down.reason
    assert down.order == []


@pytest.mark.django_db
def test_the_api_asks_for_it_and_refuses_what_is_not_a_switch(client: Any) -> None:
    indexed_repository(
        "uploads-api",
        [SourceDoc("uploads/cancel.py", [Piece(ANSWER.text.split("\n", 1)[1], "cancel_upload")])],
    )
    body = {"query": QUESTION, "use_cross_encoder": True}
    response = client.post("/api/search", data=body, content_type="application/json")
    assert response.status_code == 200
    stages = {s["name"]: s for s in response.json()["trace"]}
    assert stages["cross_encoder"]["status"] == "skipped"  # one candidate: nothing to reorder
    assert stages["cross_encoder"]["reason"] == "fewer than two candidates to reorder"
    bad = client.post(
        "/api/search", data={"query": QUESTION, "use_cross_encoder": "maybe"},
        content_type="application/json",
    )  # fmt: skip
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == "use_cross_encoder: Must be a valid boolean."
