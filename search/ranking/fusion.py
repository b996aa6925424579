"""Reciprocal Rank Fusion of ranked lists, the left-out tests and docs placed among them, and the
position-aware blend with rerank scores.

RRF (k = 60): a chunk at 1-based rank ``r`` of a list of weight ``w`` earns ``w / (k + r)``;
the original query's lists weigh ``original_weight`` (2.0), the expansions' lists 1.0. A chunk
ranked first in any list gets ``first_rank_bonus`` (0.05) once. The best ``top`` (30) are kept.

Blend: after rerank, a candidate at fusion rank 1-3 keeps 75 % of its fusion score, 4-10 60 %,
11+ 40 %; the rest is the model's relevance. The fusion score is divided by the best fusion
score first so both parts are in [0, 1]. Candidates the model gave no verdict (budget spent,
an error, an unreadable answer) keep their normalised fusion score alone: the fusion order
stands for them.

**Left out by default** (``place_left_out``): tests and docs the scope left out by default are put
back where their own scores place them. The scope (``search.retrieval.scope``) leaves tests and
documentation out unless the question's words ask for them. A question about a test or a README section that carries no such word
("where is it checked that a PUT to a GET-only endpoint gets a 405") then cannot find its
answer at all. With ``left_out_weight`` > 0 the executor also retrieves the chunks that were
left out by default (``build_left_out_filter``), in lists of their own, and each of them gets
the fusion score it would have had in an unscoped search: its *virtual rank* in a list is its
position among the left-out chunks plus the number of in-scope chunks whose score in the
matching scoped list (same method, same query) is at least its own, minus one half (so it sits
just before the in-scope chunk it beats, whose rank does not change). The scoped lists, and so
the in-scope chunks' ranks and scores, stay exactly as they are -- mixing tests and docs into
the lists themselves would push code down in every list, which no penalty after fusion can
undo (measured; see docs/benchmarks.md). The left-out chunk's RRF score is then multiplied by
``left_out_weight``: at 1.0 it competes as in an unscoped search, below 1.0 it has to beat the
code clearly before it shows.

A left-out chunk has to outrank at least one in-scope candidate: it comes back to answer better
than some of the code, not to fill the slots that the code of a small repository leaves empty.
Only kinds left out *by default* come back; an explicit ``include_tests: false`` is kept.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence

from search.types import FusedCandidate, RankedList

__all__ = [
    "FusedCandidate",
    "RankedList",
    "blend",
    "fuse_ranked_lists",
    "fusion_weight",
    "place_left_out",
]


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
            _credit(fused, chunk_id, position, weight / (k + position), ranked_list.method, score)
    for candidate in fused.values():
        if candidate.best_rank == 1:
            candidate.score += first_rank_bonus
    ordered = sorted(fused.values(), key=lambda c: (-c.score, c.best_rank, c.chunk_id))
    if top is not None:
        ordered = ordered[:top]
    for rank, candidate in enumerate(ordered, start=1):
        candidate.rank = rank
    return ordered


def _credit(
    found: dict[int, FusedCandidate],
    chunk_id: int,
    rank: float,
    rrf: float,
    method: str,
    score: float,
) -> None:
    """Add one list's RRF share ``rrf`` for ``chunk_id`` at ``rank`` (a virtual rank may be
    fractional: its best rank is rounded up) and keep the method's best raw score."""
    candidate = found.get(chunk_id)
    if candidate is None:
        candidate = found[chunk_id] = FusedCandidate(chunk_id, 0.0, best_rank=math.ceil(rank))
    candidate.score += rrf
    candidate.best_rank = min(candidate.best_rank, math.ceil(rank))
    previous = candidate.method_scores.get(method)
    if previous is None or score > previous:
        candidate.method_scores[method] = score


# Tests and docs the scope left out by default


def _scores_ascending(ranked_list: RankedList | None) -> list[float]:
    if ranked_list is None:
        return []
    return sorted(score for _, score in ranked_list.ranked)


def place_left_out(
    fused: Sequence[FusedCandidate],
    lists: Sequence[RankedList],
    left_out_lists: Sequence[RankedList],
    *,
    weight: float,
    depth: int,
    k: int = 60,
    original_weight: float = 2.0,
    first_rank_bonus: float = 0.05,
) -> tuple[list[FusedCandidate], int]:
    """``fused`` (the scoped lists' fusion) with the left-out chunks added at ``weight`` times
    their virtual-rank RRF score, best first and re-ranked; and how many were added.

    A virtual rank beyond ``depth`` (the scoped lists' depth) earns nothing, as it would not
    have made an unscoped list of that depth.
    """
    if weight <= 0 or not left_out_lists:
        return list(fused), 0
    scoped = {(rl.method, rl.query_index): rl for rl in lists}
    added: dict[int, FusedCandidate] = {}
    for ranked_list in left_out_lists:
        in_scope = _scores_ascending(scoped.get((ranked_list.method, ranked_list.query_index)))
        list_weight = ranked_list.weight(original_weight)
        for position, (chunk_id, score) in enumerate(ranked_list.ranked, start=1):
            # In-scope chunks scoring at least as well stay ahead (ties go to the scoped one);
            # the half places it just before the in-scope chunk it beats, which keeps its rank.
            ahead = len(in_scope) - bisect.bisect_left(in_scope, score)
            rank = position + ahead - 0.5
            if rank > depth:
                continue
            _credit(added, chunk_id, rank, list_weight / (k + rank), ranked_list.method, score)
    for candidate in added.values():
        if candidate.best_rank == 1:
            candidate.score += first_rank_bonus
        candidate.score *= weight
    # They come back to answer better than some of the code, never to fill the slots the code
    # leaves empty (a small repository's code query would otherwise list its tests after it).
    floor = min((c.score for c in fused), default=float("inf"))
    added = {cid: c for cid, c in added.items() if c.score > floor}
    merged = sorted([*fused, *added.values()], key=lambda c: (-c.score, c.best_rank, c.chunk_id))
    for rank, candidate in enumerate(merged, start=1):
        candidate.rank = rank
    return merged, len(added)


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
