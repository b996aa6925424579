"""HyDE: search with a hypothetical code snippet written by the chat model.

A question ("where is the retry delay computed?") and the code that answers it share few words;
a made-up snippet of that code shares more, with the code and in embedding space. The chat
model writes one, it is embedded with the configured embedding model and searched with the
same scope as the question (the search package's own vector retrieval, called as a library),
and its ranked list is fused (RRF) with the executor's answer to the question, the question's
list weighing double. Any failure (no chat model, no vectors yet) leaves the question's
results as they were and says why.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from search.ranking.fusion import RankedList, fuse_ranked_lists
from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories
from search.retrieval.vector import (
    estimate_rows,
    find_space,
    repositories_with_vectors,
    vector_search,
)
from search.types import SearchHit, SearchRequest, StageTrace

SYSTEM_PROMPT = (
    "You write the source code that would answer a question about a code base. Reply with one"
    " short, plausible code snippet only (a function or class, at most 30 lines), no prose."
)
_FENCE = re.compile(r"```[\w+-]*\n?(.*?)```", re.DOTALL)
MAX_SNIPPET_CHARS = 3000


@dataclass
class HydeOutcome:
    snippet: str = ""
    ranked: list[tuple[int, float]] = field(default_factory=list)  # (chunk id, cosine)
    trace: StageTrace = field(default_factory=lambda: StageTrace(name="hyde", status="skipped"))


def clean_snippet(text: str) -> str:
    """The code in the model's reply (inside a fence if it used one), bounded."""
    fenced = _FENCE.search(text)
    code = fenced.group(1) if fenced else text
    return code.strip()[:MAX_SNIPPET_CHARS]


def hyde_timeout() -> float:
    from django.conf import settings

    return float(getattr(settings, "REPO_SEARCH_HYDE_TIMEOUT_SECS", 20.0))


def write_hypothetical_snippet(chat: Any, question: str, *, timeout_s: float | None = None) -> str:
    """The model's made-up snippet for ``question`` (raises the model layer's errors)."""
    reply = chat.chat(
        [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question},
        ],
        max_tokens=400,
        timeout=timeout_s or hyde_timeout(),
    )
    return clean_snippet(reply or "")


def search_with_snippet(
    snippet: str, request: SearchRequest, embedder: Any, *, limit: int, timeout_ms: int = 5000
) -> tuple[list[tuple[int, float]], dict[str, Any]]:
    """Vector search for ``snippet`` within the scope ``request`` describes."""
    scope = resolve_scope(request)
    scope_filter = build_scope_filter(scope, scope_repositories(request.repo_ids, request.viewer))
    space = find_space(embedder.space_key)
    with_vectors = repositories_with_vectors(space, scope_filter) if space else []
    if space is None or not with_vectors:
        return [], {"reason": f"no vectors for this embedding model yet ({embedder.space_key})"}
    scope_filter.repositories = [r for r in scope_filter.repositories if r.id in with_vectors]
    (vector,) = embedder.embed([snippet])
    found = vector_search(
        snippet,
        vector,
        space,
        scope_filter,
        limit=limit,
        estimated_rows=estimate_rows(
            scope_filter, scope.languages, scope.include_tests, scope.include_docs
        ),
        exact_max_rows=request.tuning.exact_scan_max_rows,
        ef_search=request.tuning.hnsw_ef_search,
        timeout_ms=timeout_ms,
    )
    return found.ranked, found.detail


def run_hyde(
    question: str, request: SearchRequest, chat: Any, embedder: Any = None, *, limit: int
) -> HydeOutcome:
    """Write, embed and search a hypothetical snippet; never raises for model trouble.

    ``embedder`` defaults to the model layer's current one."""
    from llm import ModelError, get_embedder

    outcome = HydeOutcome()
    started = time.perf_counter()
    trace = outcome.trace
    try:
        outcome.snippet = write_hypothetical_snippet(chat, question)
        if not outcome.snippet:
            trace.reason = "the chat model wrote no snippet"
        else:
            outcome.ranked, detail = search_with_snippet(
                outcome.snippet, request, embedder or get_embedder(), limit=limit
            )
            trace.detail.update(detail)
            if outcome.ranked:
                trace.status = "ran"
            else:
                trace.reason = detail.get("reason", "the snippet found nothing in scope")
    except ModelError as exc:
        trace.reason = f"model unavailable: {exc}"
    except Exception as exc:  # HyDE is an option: a failure must not fail the answer
        trace.status = "failed"
        trace.reason = f"{type(exc).__name__}: {str(exc)[:200]}"
    trace.detail["snippet"] = outcome.snippet
    trace.detail["hits"] = len(outcome.ranked)
    trace.ms = round((time.perf_counter() - started) * 1000, 1)
    return outcome


def fuse_with_question(
    hits: list[SearchHit], hyde_ranked: list[tuple[int, float]], *, limit: int
) -> list[tuple[int, float]]:
    """(chunk id, fused score) best first: the question's results (weight 2) + HyDE's (1)."""
    lists = [RankedList("search", 0, [(h.chunk_id, h.combined_score) for h in hits])]
    if hyde_ranked:
        lists.append(RankedList("hyde", 1, hyde_ranked))
    fused = fuse_ranked_lists(lists, top=limit)
    return [(c.chunk_id, c.score) for c in fused]
