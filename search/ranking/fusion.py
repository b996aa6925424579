"""Reciprocal Rank Fusion of ranked lists, and the position-aware blend with rerank scores.

RRF (k = 60): a chunk at 1-based rank ``r`` of a list of weight ``w`` earns ``w / (k + r)``;
the original query's lists weigh ``original_weight`` (2.0), the expansions' lists 1.0. A chunk
ranked first in any list gets ``first_rank_bonus`` (0.05) once. The best ``top`` (30) are kept.

Blend: after rerank, a candidate at fusion rank 1-3 keeps 75 % of its fusion score, 4-10 60 %,
11+ 40 %; the rest is the model's relevance. The fusion score is divided by the best fusion
score first so both parts are in [0, 1]. Candidates the model gave no verdict (budget spent,
an error, an unreadable answer) keep their normalised fusion score alone: the fusion order
stands for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from search.types import FusedCandidate, RankedList

__all__ = ["FusedCandidate", "RankedList", "blend", "fuse_ranked_lists", "fusion_weight"]


def fuse_ranked_lists(
    lists: Sequence[RankedList],
    *,
    k: int = 60,
    original_weight: float = 2.0,
    first_rank_bonus: float = 0.05,
    top: int | None = 30,
) -> list[FusedCandidate]:
    """Weighted RRF over ``lists``; the best ``top`` candidates (None: all), best first."""
    fused: dict[int, FusedCandidate] = {}
    for ranked_list in lists:
        weight = ranked_list.weight(original_weight)
        for position, (chunk_id, score) in enumerate(ranked_list.ranked, start=1):
            candidate = fused.get(chunk_id)
            if candidate is None:
                candidate = fused[chunk_id] = FusedCandidate(chunk_id, 0.0, best_rank=position)
            candidate.score += weight / (k + position)
            candidate.best_rank = min(candidate.best_rank, position)
            previous = candidate.method_scores.get(ranked_list.method)
            if previous is None or score > previous:
                candidate.method_scores[ranked_list.method] = score
    for candidate in fused.values():
        if candidate.best_rank == 1:
            candidate.score += first_rank_bonus
    ordered = sorted(fused.values(), key=lambda c: (-c.score, c.best_rank, c.chunk_id))
    if top is not None:
        ordered = ordered[:top]
    for rank, candidate in enumerate(ordered, start=1):
        candidate.rank = rank
    return ordered


def fusion_weight(
    rank: int, *, top3: float = 0.75, top10: float = 0.60, rest: float = 0.40
) -> float:
    """The share of the fusion score kept at 1-based fusion ``rank``."""
    if rank <= 3:
        return top3
    if rank <= 10:
        return top10
    return rest


def blend(
    candidates: Sequence[FusedCandidate],
    rerank_scores: Mapping[int, float],
    *,
    top3: float = 0.75,
    top10: float = 0.60,
    rest: float = 0.40,
) -> list[tuple[FusedCandidate, float]]:
    """(candidate, blended score) best first; candidates without a verdict keep fusion alone."""
    if not candidates:
        return []
    best = max(c.score for c in candidates) or 1.0
    blended = []
    for candidate in candidates:
        normalised = candidate.score / best
        relevance = rerank_scores.get(candidate.chunk_id)
        if relevance is None:
            score = normalised
        else:
            w = fusion_weight(candidate.rank, top3=top3, top10=top10, rest=rest)
            score = w * normalised + (1.0 - w) * relevance
        blended.append((candidate, score))
    blended.sort(key=lambda pair: (-pair[1], pair[0].rank))
    return blended
