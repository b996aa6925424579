"""The local cross-encoder stage: the real ms-marco model reorders the best fused candidates,
within its budget, and says what it did in the trace."""

from __future__ import annotations

import pytest

from llm.onnx_models import get_cross_encoder
from search.executor import SearchExecutor
from search.llm_stages import reordered
from search.ranking.cross_encoder import Passage, clear_cache, cross_encode
from search.ranking.fusion import FusedCandidate
from search.types import SearchRequest
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
    assert on.hits[0].file_path == "uploads/cancel.py"
    off = SearchExecutor().run(SearchRequest(query=QUESTION, cross_encoder=False))
    off_stage = off.stage("cross_encoder")
    assert off_stage is not None and off_stage.status == "skipped"
    assert off_stage.reason == "not requested"
