"""The live ranking replayed offline from a capture of ``bench/eval/ltr_capture.py``.

``replay`` rebuilds a question's pool in the rules' order with the product's own functions
(``fuse_ranked_lists`` -> ``place_left_out`` -> ``apply_signals``, lists cut to a depth);
``search.ranking.ordering.features`` gives each candidate's row, a model orders them, and
``cross_encoder_reorder`` reorders that order's best candidates with the cross-encoder logits the
capture stored, through the product's ``cross_encode`` (a stand-in model answers from the
capture), as the live stack does after the learned order. ``EXTRA_FEATURES`` are candidate
features tried beside ``FEATURES`` (``ltr_train.py --extra``) before one joins the product.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from search.ranking.cross_encoder import Passage, cross_encode, passage_tokens
from search.ranking.fusion import RankedList, fuse_ranked_lists, place_left_out
from search.ranking.ordering import QuestionShape, apply_signals
from search.retrieval.hydrate import ChunkFacts
from search.retrieval.query import normalise_symbol
from search.retrieval.scope import LEFT_OUT_BY_DEFAULT
from search.types import FusedCandidate, SearchTuning


def replay(
    q: dict[str, Any], depth: int, facts: dict[int, Any]
) -> tuple[list[FusedCandidate], list[RankedList], QuestionShape]:
    """The default pipeline replayed for one captured question: (pool in the rules' order,
    every list -- scoped and left out, cut to ``depth`` --, the question's shape)."""

    def lists_of(raw: Sequence[dict[str, Any]]) -> list[RankedList]:
        return [
            RankedList(
                rl["method"],
                rl["query_index"],
                [(int(c), float(s)) for c, s in rl["ranked"][:depth]],
            )
            for rl in raw
        ]

    lists, left_out = lists_of(q["lists"]), lists_of(q["left_out"])
    fused = fuse_ranked_lists(lists, top=None)
    place = dict(q["place_kwargs"], depth=depth)
    fused, _ = place_left_out(fused, lists, left_out, **place)
    kwargs = dict(q["signal_kwargs"])
    pool, _ = apply_signals(fused, facts, **kwargs, top=max(len(fused), 1))
    scope = q["scope"]
    shape = QuestionShape(
        q["query"],
        prefer_tests=scope["prefer_tests"],
        prefer_docs=scope["prefer_docs"],
        tests_left_out=not scope["include_tests"] and scope["tests_reason"] == LEFT_OUT_BY_DEFAULT,
        docs_left_out=not scope["include_docs"] and scope["docs_reason"] == LEFT_OUT_BY_DEFAULT,
        usage=scope["docs_reason"].startswith("usage question"),
    )
    return pool, [*lists, *left_out], shape


def overlaps(row: dict[str, Any], expected: Sequence[Sequence[Any]]) -> bool:
    """The harness's hit rule: the chunk overlaps an expected (path, start, end) range."""
    return any(
        row["path"] == p and row["start_line"] <= e and row["end_line"] >= s for p, s, e in expected
    )


def chunk_facts(repository: str, row: dict[str, Any]) -> ChunkFacts:
    """``ChunkFacts`` of a captured chunk row (path, lines, kind, test/doc, symbol)."""
    return ChunkFacts(
        f"{repository}/{row['path']}",
        row["is_test"],
        row["is_doc"],
        normalise_symbol(row["symbol"]),
        row["end_line"] - row["start_line"] + 1,
        row["kind"],
    )


class StoredScores:
    """A stand-in cross-encoder: each passage's text is its chunk id, its logit the captured one."""

    batch = 1000

    def __init__(self, logits: Mapping[int, float]) -> None:
        self.logits = logits

    def score(self, query: str, texts: Sequence[str], **_: Any) -> list[float]:
        return [self.logits[int(text)] for text in texts]


def cross_encoder_reorder(
    query: str, order: Sequence[int], logits: Mapping[int, float], tuning: SearchTuning
) -> list[int] | None:
    """``order`` (chunk ids, best first) with its first ``cross_encoder_top`` reordered as the
    live stage reorders them; None when a logit of those is missing from the capture."""
    top = list(order[: tuning.cross_encoder_top])
    if len(top) < 2:
        return list(order)
    if any(cid not in logits for cid in top):
        return None
    outcome = cross_encode(
        StoredScores(logits),
        f"replay\x00{query}",  # the product's score cache is keyed by query: keep ours apart
        [Passage(cid, str(cid)) for cid in top],
        budget_s=math.inf,
        max_tokens=passage_tokens(tuning, StoredScores),
        weight=tuning.cross_encoder_weight,
    )
    return [*outcome.order, *order[len(outcome.order) :]]


def _lines_by_file(
    pool: Sequence[FusedCandidate], facts: Mapping[int, ChunkFacts]
) -> dict[str, int]:
    longest: dict[str, int] = {}
    for c in pool:
        fact = facts[c.chunk_id]
        longest[fact.path] = max(longest.get(fact.path, 0), fact.lines)
    return longest


def _column(per_chunk: Callable[[ChunkFacts, dict[str, int]], float]) -> Any:
    def column(pool: Sequence[FusedCandidate], facts: Mapping[int, ChunkFacts]) -> list[float]:
        longest = _lines_by_file(pool, facts)
        return [per_chunk(facts[c.chunk_id], longest) for c in pool]

    return column


# name -> (pool, facts) -> one value per pool candidate (``ltr_train.py --extra NAME``); what
# each gave is in the history of this file (git log -p).
EXTRA_FEATURES: dict[str, Any] = {
    "lines_sat30": _column(lambda f, _: min(f.lines, 30) / 30.0),
    "lines_sat60": _column(lambda f, _: min(f.lines, 60) / 60.0),
    "log_lines_cap60": _column(lambda f, _: math.log1p(min(max(f.lines, 0), 60)) / 5.0),
    "log_lines_cap120": _column(lambda f, _: math.log1p(min(max(f.lines, 0), 120)) / 5.0),
    "long_chunk": _column(lambda f, _: 1.0 if f.lines > 80 else 0.0),
    "lines_rel_file": _column(lambda f, longest: f.lines / max(longest[f.path], 1)),
    "long_test": _column(lambda f, _: math.log1p(max(f.lines, 0)) / 5.0 if f.is_test else 0.0),
}
