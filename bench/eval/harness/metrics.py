"""Retrieval metrics of the evaluation harness: pure functions over labelled queries and results.

A result slot *hits* an expected range when the paths are equal and the line ranges overlap
(and, in a search over every repository, the slot is in the question's own repository).
Per configuration we report, over all queries:

- ``hit@1`` and ``hit@k``: share of queries whose first / any of the first k slots hits;
- ``recall@k``: mean share of a query's expected ranges covered by the first k slots;
- ``MRR``: mean of 1 / rank of the first hitting slot within the first k (0 when none);
- ``symbol-hit@k``: among queries with an expected ``symbol``, the share where a slot of the
  first k has that path and exactly that symbol (a chunk that merely overlaps does not count);
- ``test/doc share``: share of all returned slots that are test or documentation chunks, and
  the same share over the queries that are *not* about tests or docs (there it is noise);
- latency p50 / p95 in milliseconds (linear interpolation between closest ranks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.eval.harness.queries import LabelledQuery

SCOPE_KINDS = frozenset({"tests", "docs"})


@dataclass(frozen=True)
class ResultSlot:
    """One returned result, reduced to what the metrics need."""

    path: str
    start_line: int
    end_line: int
    symbol: str = ""
    is_test: bool = False
    is_doc: bool = False
    # From another repository than the one the question was written for (a search over every
    # repository): never relevant, whatever its path and lines.
    elsewhere: bool = False


@dataclass(frozen=True)
class QueryOutcome:
    query: LabelledQuery
    slots: tuple[ResultSlot, ...]
    ms: float


@dataclass
class Metrics:
    queries: int = 0
    hit_at_1: float = 0.0
    hit_at_k: float = 0.0
    recall_at_k: float = 0.0
    mrr: float = 0.0
    symbol_hit_at_k: float | None = None  # None when no query names a symbol
    symbol_queries: int = 0
    test_doc_share: float = 0.0
    test_doc_share_code_queries: float | None = None
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (0-100) with linear interpolation, as ``numpy.percentile``."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * pct / 100.0
    lower = math.floor(position)
    upper = math.ceil(position)
    if lower == upper:
        return float(ordered[lower])
    weight = position - lower
    return float(ordered[lower] * (1 - weight) + ordered[upper] * weight)


def slot_hits(query: LabelledQuery, slot: ResultSlot) -> bool:
    return not slot.elsewhere and any(
        e.overlaps(slot.path, slot.start_line, slot.end_line) for e in query.expected
    )


def first_hit_rank(outcome: QueryOutcome, k: int) -> int | None:
    """1-based rank of the first hitting slot within the first k, or None."""
    for rank, slot in enumerate(outcome.slots[:k], start=1):
        if slot_hits(outcome.query, slot):
            return rank
    return None


def recall(outcome: QueryOutcome, k: int) -> float:
    expected = outcome.query.expected
    covered = sum(
        1
        for e in expected
        if any(
            e.overlaps(s.path, s.start_line, s.end_line)
            for s in outcome.slots[:k]
            if not s.elsewhere
        )
    )
    return covered / len(expected)


def symbol_hit(outcome: QueryOutcome, k: int) -> bool | None:
    """None when the query names no symbol."""
    wanted = {(e.path, e.symbol) for e in outcome.query.expected if e.symbol}
    if not wanted:
        return None
    return any((s.path, s.symbol) in wanted for s in outcome.slots[:k] if not s.elsewhere)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _share(outcomes: Sequence[QueryOutcome], k: int) -> float | None:
    slots = [slot for outcome in outcomes for slot in outcome.slots[:k]]
    if not slots:
        return None
    return sum(1 for slot in slots if slot.is_test or slot.is_doc) / len(slots)


def compute_metrics(outcomes: Sequence[QueryOutcome], k: int) -> Metrics:
    """Aggregate metrics of one configuration over its query outcomes."""
    if k < 1:
        raise ValueError("k must be at least 1")
    metrics = Metrics(queries=len(outcomes))
    if not outcomes:
        return metrics
    ranks = [first_hit_rank(outcome, k) for outcome in outcomes]
    metrics.hit_at_1 = _mean([1.0 if rank == 1 else 0.0 for rank in ranks])
    metrics.hit_at_k = _mean([1.0 if rank else 0.0 for rank in ranks])
    metrics.mrr = _mean([1.0 / rank if rank else 0.0 for rank in ranks])
    metrics.recall_at_k = _mean([recall(outcome, k) for outcome in outcomes])
    symbol_hits = [hit for hit in (symbol_hit(o, k) for o in outcomes) if hit is not None]
    metrics.symbol_queries = len(symbol_hits)
    metrics.symbol_hit_at_k = (
        _mean([1.0 if h else 0.0 for h in symbol_hits]) if symbol_hits else None
    )
    metrics.test_doc_share = _share(outcomes, k) or 0.0
    metrics.test_doc_share_code_queries = _share(
        [o for o in outcomes if o.query.kind not in SCOPE_KINDS], k
    )
    latencies = [outcome.ms for outcome in outcomes]
    metrics.p50_ms = percentile(latencies, 50)
    metrics.p95_ms = percentile(latencies, 95)
    for kind in sorted({o.query.kind for o in outcomes}):
        group = [(o, r) for o, r in zip(outcomes, ranks, strict=True) if o.query.kind == kind]
        metrics.by_kind[kind] = {
            "queries": float(len(group)),
            "hit_at_k": _mean([1.0 if r else 0.0 for _o, r in group]),
            "mrr": _mean([1.0 / r if r else 0.0 for _o, r in group]),
        }
    return metrics
