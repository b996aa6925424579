"""The model stages of a search, each recorded in the trace: the chat model's query expansion
(before retrieval) and rerank (after fusion), and the local cross-encoder (after fusion, before
the chat rerank). Called by ``search.executor.SearchExecutor.run``; ``chat`` gives the
executor's chat client, made only when a stage runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from search.ranking.cross_encoder import Passage, cross_encode, passage_text
from search.ranking.fusion import FusedCandidate
from search.ranking.rerank import RerankCandidate, rerank_candidates
from search.retrieval.expansion import expand_query
from search.retrieval.query import identifier_query
from search.types import SearchHit, SearchRequest, StageTrace, record_stage


def expansion_stage(
    chat: Callable[[], Any], request: SearchRequest, trace: list[StageTrace]
) -> list[str]:
    """The question plus the chat model's alternative phrasings (the "expansion" stage)."""
    queries = [request.query]
    with record_stage(trace, "expansion") as stage:
        if not request.use_expansion:
            stage.set("skipped", "not requested")
            return queries
        expansion = expand_query(
            chat(),
            request.query,
            count=request.tuning.expansion_count,
            timeout_s=request.tuning.expansion_timeout_s,
        )
        stage.set(
            expansion.status,
            expansion.reason,
            alternatives=expansion.alternatives,
            **expansion.detail,
        )
        queries += expansion.alternatives
    return queries


def rerank_stage(
    chat: Callable[[], Any],
    request: SearchRequest,
    candidates: list[FusedCandidate],
    hits: dict[int, SearchHit],
    trace: list[StageTrace],
) -> dict[int, float]:
    """The chat model's judgements of the best candidates, by chunk id (the "rerank" stage)."""
    with record_stage(trace, "rerank") as stage:
        if not request.use_rerank:
            stage.set("skipped", "not requested")
            return {}
        chosen = [
            RerankCandidate(
                chunk_id=c.chunk_id,
                path=hits[c.chunk_id].file_path,
                start_line=hits[c.chunk_id].start_line,
                end_line=hits[c.chunk_id].end_line,
                symbol=hits[c.chunk_id].symbol,
                content=hits[c.chunk_id].content,
            )
            for c in candidates[: request.tuning.rerank_top]
        ]
        outcome = rerank_candidates(
            chat(),
            request.query,
            chosen,
            concurrency=request.tuning.rerank_concurrency,
            budget_s=request.tuning.rerank_budget_s,
            max_chars=request.tuning.rerank_max_chars,
        )
        stage.set(outcome.status, outcome.reason, **outcome.detail)  # type: ignore[arg-type]
        return outcome.scores
    return {}


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
    "cross_encoder" stage); the fusion order when it does not run."""
    with record_stage(trace, "cross_encoder") as stage:
        if not cross_encoder_on(request):
            stage.set("skipped", "not requested")
            return candidates
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
            max_tokens=request.tuning.cross_encoder_tokens,
            weight=request.tuning.cross_encoder_weight,
        )
        stage.set(outcome.status, outcome.reason, **outcome.detail)  # type: ignore[arg-type]
        if not outcome.order:
            return candidates
        return reordered(candidates, outcome.order)
    return candidates


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
