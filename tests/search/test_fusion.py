"""Reciprocal Rank Fusion and the position-aware blend: exact numbers."""

from __future__ import annotations

import pytest

from search.ranking.fusion import (
    FusedCandidate,
    RankedList,
    blend,
    fuse_ranked_lists,
    fusion_weight,
)


def ranked(*ids: int) -> list[tuple[int, float]]:
    return [(chunk_id, 10.0 - i) for i, chunk_id in enumerate(ids)]


def test_rrf_scores_weights_and_first_rank_bonus() -> None:
    lists = [
        RankedList("fulltext", 0, ranked(1, 2, 3)),
        RankedList("vector", 0, ranked(2, 1, 4)),
        RankedList("fulltext", 1, ranked(3, 5)),  # an expansion: weight 1
    ]
    fused = fuse_ranked_lists(lists, k=60, original_weight=2.0, first_rank_bonus=0.05, top=30)
    scores = {c.chunk_id: c.score for c in fused}
    assert scores[1] == pytest.approx(2 / 61 + 2 / 62 + 0.05)
    assert scores[2] == pytest.approx(2 / 62 + 2 / 61 + 0.05)
    assert scores[3] == pytest.approx(2 / 63 + 1 / 61 + 0.05)
    assert scores[4] == pytest.approx(2 / 63)
    assert scores[5] == pytest.approx(1 / 62)
    # Ties (1 and 2) break on the best rank, then the id: deterministic.
    assert [c.chunk_id for c in fused] == [1, 2, 3, 4, 5]
    assert [c.rank for c in fused] == [1, 2, 3, 4, 5]


def test_bonus_counts_once_and_best_score_per_method_is_kept() -> None:
    lists = [
        RankedList("fulltext", 0, [(7, 3.5)]),
        RankedList("vector", 0, [(7, 0.9)]),
        RankedList("vector", 1, [(8, 0.95), (7, 0.97)]),
    ]
    fused = fuse_ranked_lists(lists)
    seven = next(c for c in fused if c.chunk_id == 7)
    assert seven.score == pytest.approx(2 / 61 + 2 / 61 + 1 / 62 + 0.05)
    assert seven.method_scores == {"fulltext": 3.5, "vector": 0.97}


def test_only_the_top_candidates_are_kept() -> None:
    lists = [RankedList("fulltext", 0, ranked(*range(100, 150)))]
    fused = fuse_ranked_lists(lists, top=30)
    assert len(fused) == 30
    assert fused[0].chunk_id == 100 and fused[-1].chunk_id == 129
    assert fused[-1].score == pytest.approx(2 / 90)


def test_tunables_are_honoured() -> None:
    lists = [RankedList("fulltext", 0, ranked(1)), RankedList("vector", 1, ranked(2))]
    fused = fuse_ranked_lists(lists, k=10, original_weight=3.0, first_rank_bonus=0.0)
    assert {c.chunk_id: c.score for c in fused} == {
        1: pytest.approx(3 / 11),
        2: pytest.approx(1 / 11),
    }


def test_fusion_weight_by_position() -> None:
    assert [fusion_weight(r) for r in (1, 3, 4, 10, 11, 30)] == [0.75, 0.75, 0.6, 0.6, 0.4, 0.4]


def candidates(*scores: float) -> list[FusedCandidate]:
    return [FusedCandidate(i + 1, s, rank=i + 1) for i, s in enumerate(scores)]


def test_blend_mixes_by_position_and_keeps_fusion_for_unjudged() -> None:
    cands = candidates(0.2, 0.19, 0.18, 0.1, 0.09, 0.08, 0.07, 0.06, 0.05, 0.04, 0.02)
    out = dict((c.chunk_id, s) for c, s in blend(cands, {1: 0.0, 4: 1.0, 11: 1.0}))
    assert out[1] == pytest.approx(0.75 * 1.0 + 0.25 * 0.0)
    assert out[4] == pytest.approx(0.6 * 0.5 + 0.4 * 1.0)
    assert out[11] == pytest.approx(0.4 * 0.1 + 0.6 * 1.0)
    # No verdict: the normalised fusion score alone.
    assert out[2] == pytest.approx(0.95)
    assert out[5] == pytest.approx(0.45)


def test_blend_reorders_when_the_model_disagrees() -> None:
    cands = candidates(0.1, 0.09, 0.08, 0.07)
    order = [c.chunk_id for c, _ in blend(cands, {1: 0.0, 2: 0.0, 3: 0.0, 4: 1.0})]
    assert order == [4, 1, 2, 3]
    assert blend([], {}) == []
