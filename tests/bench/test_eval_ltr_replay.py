"""The offline replay of the live ranking (bench/eval/harness/ltr_replay.py): the cross-encoder's
reorder from stored logits is the live stage's, and the candidate features are what they say."""

from __future__ import annotations

import math

from bench.eval.harness.ltr_replay import EXTRA_FEATURES, cross_encoder_reorder
from search.ranking.cross_encoder import Passage, cross_encode, passage_tokens
from search.retrieval.hydrate import ChunkFacts
from search.types import FusedCandidate, SearchTuning


class _Model:
    """Scores a passage by the number its text starts with (the live stage's input shape)."""

    def score(self, query: str, texts: list[str], **_: object) -> list[float]:
        return [float(text.split()[0]) for text in texts]


def test_the_reorder_from_stored_logits_is_the_live_stages() -> None:
    tuning = SearchTuning()
    order = list(range(1, 31))
    logits = {cid: float((cid * 7) % 11) for cid in order}
    replayed = cross_encoder_reorder("q", order, logits, tuning)
    passages = [Passage(cid, f"{logits[cid]} text") for cid in order[: tuning.cross_encoder_top]]
    live = cross_encode(
        _Model(),
        "q live",
        passages,
        budget_s=math.inf,
        max_tokens=passage_tokens(tuning, _Model()),
        weight=tuning.cross_encoder_weight,
    )
    assert replayed is not None
    assert replayed[: tuning.cross_encoder_top] == live.order != order[: tuning.cross_encoder_top]
    assert replayed[tuning.cross_encoder_top :] == order[tuning.cross_encoder_top :]


def test_a_missing_logit_among_the_reordered_gives_no_replay() -> None:
    tuning = SearchTuning()
    assert cross_encoder_reorder("q", [1, 2, 3], {1: 0.0, 2: 1.0}, tuning) is None
    assert cross_encoder_reorder("q", [1], {}, tuning) == [1]  # nothing to reorder


def test_length_features_saturate_and_compare_with_the_file() -> None:
    facts = {
        1: ChunkFacts("r/a.py", False, False, "a.f", 10, "function"),
        2: ChunkFacts("r/a.py", False, False, "A", 200, "class"),
        3: ChunkFacts("r/tests/test_a.py", True, False, "test_f", 40, "function"),
    }
    pool = [FusedCandidate(chunk_id=i, score=1.0 / i) for i in (1, 2, 3)]
    assert EXTRA_FEATURES["lines_sat30"](pool, facts) == [10 / 30, 1.0, 1.0]
    assert EXTRA_FEATURES["lines_rel_file"](pool, facts) == [10 / 200, 1.0, 1.0]
    assert EXTRA_FEATURES["long_chunk"](pool, facts) == [0.0, 1.0, 0.0]
    capped = EXTRA_FEATURES["log_lines_cap60"](pool, facts)
    assert capped[1] == math.log1p(60) / 5 and capped[0] == math.log1p(10) / 5
    assert EXTRA_FEATURES["long_test"](pool, facts)[:2] == [0.0, 0.0]
