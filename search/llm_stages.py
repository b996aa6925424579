"""The chat model's stages of a search, each recorded in the trace: query expansion (before
retrieval) and rerank (after fusion). Called by ``search.executor.SearchExecutor.run``; ``chat``
gives the executor's chat client, made only when a stage runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from search.ranking.fusion import FusedCandidate
from search.ranking.rerank import RerankCandidate, rerank_candidates
from search.retrieval.expansion import expand_query
from search.tracing import record_stage
from search.types import SearchHit, SearchRequest, StageTrace


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
            count=request.expansion_count,
            timeout_s=request.expansion_timeout_s,
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
            for c in candidates[: request.rerank_top]
        ]
        outcome = rerank_candidates(
            chat(),
            request.query,
            chosen,
            concurrency=request.rerank_concurrency,
            budget_s=request.rerank_budget_s,
            max_chars=request.rerank_max_chars,
        )
        stage.set(outcome.status, outcome.reason, **outcome.detail)  # type: ignore[arg-type]
        return outcome.scores
    return {}
