"""The local cross-encoder stage: ms-marco-MiniLM-L-12-v2 reads (query, chunk) pairs and reorders
the best fused candidates, with no chat model (``llm.onnx_models.OnnxCrossEncoder``).

The first ``top`` candidates are scored best first, a few at a time, under one time budget: when
it runs out, the candidates scored so far (always a prefix of the fusion order) are reordered
among their own places and the rest keep theirs, as the LLM rerank keeps what it judged. The new
order of the scored prefix mixes two reciprocal ranks, the fusion's and the model's:

    (1 - weight) / (K + fusion rank) + weight / (K + model rank)

so a strong fusion answer (an identifier's definition, a named file) is not thrown away on the
model's word, and the model decides among candidates the fusion could not tell apart. Scores are
kept per (query, chunk) in a bounded cache: a chunk's text never changes under its id, so a
repeated query (paging, the page's re-runs) costs nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from llm import ModelError
from search.lru import Lru
from search.retrieval.query import identifier_query
from search.types import (
    FusedCandidate,
    SearchHit,
    SearchRequest,
    SearchTuning,
    StageTrace,
    record_stage,
)

RANK_K = 5  # small: the reorder acts among the first few places, where it matters
BATCH = 4  # pairs between two looks at the clock, unless the model says (``model.batch``)
SCORE_CACHE_SIZE = 20_000

_scores: Lru[tuple[str, int, int], float] = Lru(SCORE_CACHE_SIZE)


@dataclass
class Passage:
    chunk_id: int
    text: str  # what the model reads after the query: path, symbol, then the chunk's text


@dataclass
class CrossEncoding:
    status: str  # "ran" | "skipped" | "failed"
    reason: str = ""
    order: list[int] = field(default_factory=list)  # chunk ids of the scored prefix, new order
    scores: dict[int, float] = field(default_factory=dict)  # chunk id -> the model's logit
    detail: dict[str, Any] = field(default_factory=dict)


def cross_encoder_on(request: SearchRequest) -> bool:
    """Whether the local cross-encoder reorders this search's best candidates."""
    if request.cross_encoder is not None:
        return request.cross_encoder
    from django.conf import settings

    return bool(getattr(settings, "REPO_SEARCH_CROSS_ENCODER", False))


def cross_encoder_stage(
    request: SearchRequest,
    candidates: list[FusedCandidate],
    hits: dict[int, SearchHit],
    trace: list[StageTrace],
) -> list[FusedCandidate]:
    """``candidates`` with the best ones reordered by the local cross-encoder (the
    "cross_encoder" stage, run when ``cross_encoder_on``); the fusion order when it cannot."""
    with record_stage(trace, "cross_encoder") as stage:
        if identifier_query(request.query):
            # Measured: it never changed an identifier question's answer (docs/benchmarks.md).
            stage.set("skipped", "an identifier query: the fusion's exact-name order stands")
            return candidates
        top = [c for c in candidates[: request.tuning.cross_encoder_top] if c.chunk_id in hits]
        if len(top) < 2:
            stage.set("skipped", "fewer than two candidates to reorder")
            return candidates
        try:
            from llm import get_reranker

            model = get_reranker()
        except ImportError as exc:  # the carrier wheel or onnxruntime is not installed
            stage.set("skipped", f"the cross-encoder cannot load: {exc}")
            return candidates
        passages = [
            Passage(c.chunk_id, passage_text(h.file_path, h.symbol, h.content))
            for c in top
            for h in (hits[c.chunk_id],)
        ]
        outcome = cross_encode(
            model,
            request.query,
            passages,
            budget_s=request.tuning.cross_encoder_budget_s,
            max_tokens=passage_tokens(request.tuning, model),
            weight=request.tuning.cross_encoder_weight,
        )
        stage.set(outcome.status, outcome.reason, **outcome.detail)  # type: ignore[arg-type]
        if not outcome.order:
            return candidates
        return reordered(candidates, outcome.order)
    return candidates


def passage_tokens(tuning: SearchTuning, model: Any) -> int:
    """Tokens of each (query, chunk) pair the model reads: the search's, else the model's own
    (``passage_tokens``: 128 for the built-in model, 256 for a rerank server)."""
    return tuning.cross_encoder_tokens or int(getattr(model, "passage_tokens", 128))


def reordered(candidates: list[FusedCandidate], order: list[int]) -> list[FusedCandidate]:
    """The candidates with those in ``order`` moved into that order over the places they held;
    their fusion scores move with the places, so every later step sees one consistent order."""
    chosen = set(order)
    places = [i for i, c in enumerate(candidates) if c.chunk_id in chosen]
    by_id = {c.chunk_id: c for c in candidates}
    scores = [candidates[i].score for i in places]
    out = list(candidates)
    for place, score, chunk_id in zip(places, scores, order, strict=True):
        candidate = by_id[chunk_id]
        candidate.score = score
        out[place] = candidate
    return out


def passage_text(path: str, symbol: str, content: str) -> str:
    head = f"{path} {symbol}".strip()
    return f"{head}\n{content}"


def cross_encode(
    model: Any,
    query: str,
    passages: list[Passage],
    *,
    budget_s: float,
    max_tokens: int,
    weight: float,
) -> CrossEncoding:
    """Score ``passages`` (in fusion order) within ``budget_s``; the scored prefix reordered."""
    if not passages:
        return CrossEncoding("skipped", "no candidates")
    deadline = time.monotonic() + budget_s
    key = (query, max_tokens)
    cached = _scores.get_many((*key, p.chunk_id) for p in passages)
    scores = {cid: s for (_q, _t, cid), s in cached.items()}
    calls = 0
    scored = 0
    step = int(getattr(model, "batch", BATCH))
    error = ""
    while scored < len(passages):
        batch = passages[scored : scored + step]
        todo = [p for p in batch if p.chunk_id not in scores]
        if todo:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                logits = model.score(
                    query, [p.text for p in todo], max_tokens=max_tokens, timeout=left
                )
            except ModelError as exc:  # a rerank server down or answering nonsense
                error = str(exc)[:200]
                break
            calls += 1
            fresh = {p.chunk_id: float(s) for p, s in zip(todo, logits, strict=True)}
            scores.update(fresh)
            _scores.put_many({(*key, cid): s for cid, s in fresh.items()})
        scored += len(batch)
    prefix = passages[:scored]
    detail = {
        "candidates": len(passages),
        "scored": len(prefix),
        "cached": len(cached),
        "model_calls": calls,
        "max_tokens": max_tokens,
        "weight": weight,
    }
    if not prefix:
        why = f"the reranker failed: {error}" if error else f"the {budget_s:g} s budget ran out"
        return CrossEncoding("failed" if error else "skipped", why, detail=detail)
    by_model = sorted(prefix, key=lambda p: -scores[p.chunk_id])
    model_rank = {p.chunk_id: rank for rank, p in enumerate(by_model, start=1)}

    def mixed(item: tuple[int, Passage]) -> float:
        fusion_rank, p = item
        return (1 - weight) / (RANK_K + fusion_rank) + weight / (RANK_K + model_rank[p.chunk_id])

    ranked = sorted(enumerate(prefix, start=1), key=lambda item: (-mixed(item), item[0]))
    order = [p.chunk_id for _rank, p in ranked]
    reason = ""
    if len(prefix) < len(passages):
        why = f"the reranker failed: {error}" if error else f"the {budget_s:g} s budget ran out"
        reason = f"{len(prefix)} of {len(passages)} scored ({why})"
    kept = {p.chunk_id: scores[p.chunk_id] for p in prefix}
    moved = sum(1 for a, b in zip(order, (p.chunk_id for p in prefix), strict=True) if a != b)
    return CrossEncoding("ran", reason, order, kept, detail | {"moved": moved})


def clear_cache() -> None:
    _scores.clear()
