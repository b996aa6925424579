"""LLM re-ranking: per candidate, the chat model answers yes/no with a confidence (SPEC §3.4).

``rerank_candidates`` asks about each candidate on ``concurrency`` threads under one overall
time budget. When the budget is spent it returns at once with the verdicts it has; calls still
in flight finish (bounded by the same deadline) in the background and are ignored, and calls
not yet started never start. Only candidates with a verdict are blended (``search.ranking.fusion``);
the rest keep their fusion order.

The model is asked for ``{"relevant": bool, "confidence": 0..1}`` under a JSON schema the server
enforces where it can (a small model then answers in the shape instead of prose); answers are
still read leniently (``llm.chat_parsing.parse_yes_no``), and the detail counts how each verdict
was read (``parsed_json`` / ``parsed_keyword``) and what became of every candidate. The threads
never outnumber the process's chat-call slots (``LLM_MAX_CONCURRENT_CALLS``): more would only
queue on a model server that answers one at a time. Each snippet is cut to fit the model's
context window (``LLM_CONTEXT_TOKENS``) as well as ``max_chars``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from llm import ChatUnavailable, ModelBusy, ModelError, ModelUnavailable
from llm.chat_parsing import parse_yes_no
from search.types import FusedCandidate, SearchHit, SearchRequest, StageTrace, record_stage

SYSTEM_PROMPT = (
    "You judge search results for a code search engine. Given a query and one code snippet, "
    "say whether the snippet is relevant to the query (it answers it, implements it or is "
    'the place the query asks about). Answer with JSON only: {"relevant": true or false, '
    '"confidence": a number from 0 to 1}.'
)
MIN_CALL_SECONDS = 0.2  # no call starts with less time than this left
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "relevant": {"type": "boolean"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["relevant", "confidence"],
}
VERDICT_TOKENS = 40
CHARS_PER_TOKEN = 3.0
PROMPT_OVERHEAD_TOKENS = 200  # system prompt, query, labels, chat template


def snippet_chars(chat: Any, max_chars: int) -> int:
    """``max_chars``, less if the model's context window cannot hold that much code."""
    window = getattr(chat, "context_tokens", None)
    if not isinstance(window, int) or window <= 0:
        return max_chars
    fits = int((window - PROMPT_OVERHEAD_TOKENS - VERDICT_TOKENS) * CHARS_PER_TOKEN)
    return max(200, min(max_chars, fits))


def call_concurrency(requested: int) -> int:
    from llm.limits import max_calls

    return max(1, min(requested, max_calls()))


@dataclass
class RerankCandidate:
    chunk_id: int
    path: str
    start_line: int
    end_line: int
    symbol: str
    content: str


@dataclass
class Reranking:
    status: str  # "ran" | "skipped" | "failed"
    reason: str = ""
    scores: dict[int, float] = field(default_factory=dict)  # chunk id -> relevance in [0, 1]
    detail: dict[str, Any] = field(default_factory=dict)


def _messages(query: str, candidate: RerankCandidate, max_chars: int) -> list[dict[str, str]]:
    where = f"{candidate.path}:{candidate.start_line}-{candidate.end_line}"
    if candidate.symbol:
        where += f" ({candidate.symbol})"
    snippet = candidate.content[:max_chars]
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"Query: {query}\n\nSnippet from {where}:\n```\n{snippet}\n```",
        },
    ]


def rerank_stage(
    chat: Callable[[], Any],
    request: SearchRequest,
    candidates: list[FusedCandidate],
    hits: dict[int, SearchHit],
    trace: list[StageTrace],
) -> dict[int, float]:
    """The chat model's judgements of the best candidates, by chunk id (the "rerank" stage, run
    when the request asks for it)."""
    with record_stage(trace, "rerank") as stage:
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


def rerank_candidates(
    chat: Any,
    query: str,
    candidates: list[RerankCandidate],
    *,
    concurrency: int = 4,
    budget_s: float = 8.0,
    max_chars: int = 1500,
) -> Reranking:
    """Relevance per candidate from ``chat``, as many as the budget allows."""
    if not getattr(chat, "available", False):
        return Reranking("skipped", "no chat model configured")
    if not candidates:
        return Reranking("skipped", "no candidates to rerank")
    deadline = time.monotonic() + budget_s
    lock = threading.Lock()
    scores: dict[int, float] = {}
    errors: list[str] = []
    counts = {"unreadable": 0, "late": 0, "timed_out": 0, "unreachable": 0, "errors": 0}
    counts |= {"busy": 0, "parsed_json": 0, "parsed_keyword": 0}
    threads = call_concurrency(concurrency)
    max_chars = snippet_chars(chat, max_chars)
    calls = {"started": 0, "finished": 0}
    unconfigured = threading.Event()

    def judge(candidate: RerankCandidate) -> None:
        remaining = deadline - time.monotonic()
        if remaining < MIN_CALL_SECONDS or unconfigured.is_set():
            return
        with lock:
            calls["started"] += 1
        try:
            _judge(candidate, remaining)
        finally:
            with lock:
                calls["finished"] += 1

    def _judge(candidate: RerankCandidate, remaining: float) -> None:
        try:
            answer = chat.chat(
                _messages(query, candidate, max_chars),
                max_tokens=VERDICT_TOKENS,
                timeout=remaining,
                schema=VERDICT_SCHEMA,
            )
        except ChatUnavailable:
            unconfigured.set()
            return
        except ModelBusy as exc:
            with lock:
                counts["busy"] += 1
                errors.append(str(exc)[:160])
            return
        except ModelUnavailable as exc:
            with lock:
                counts["timed_out" if _is_timeout(exc) else "unreachable"] += 1
                errors.append(str(exc)[:160])
            return
        except ModelError as exc:
            with lock:
                counts["errors"] += 1
                errors.append(str(exc)[:160])
            return
        verdict = parse_yes_no(answer)
        with lock:
            if verdict is None:
                counts["unreadable"] += 1
                return
            counts[f"parsed_{verdict.parsed_from}"] += 1
            if time.monotonic() <= deadline:
                scores[candidate.chunk_id] = verdict.score
            else:
                counts["late"] += 1

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="rerank")
    try:
        futures = [pool.submit(judge, c) for c in candidates]
        wait(futures, timeout=max(0.0, budget_s))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    with lock:
        judged = dict(scores)
        counts = dict(counts)
        first_error = errors[0] if errors else ""
        # True counts when the budget ends: calls still waiting on the model, and candidates
        # whose call never started (queued behind a slow model, or too little time left).
        counts["in_flight"] = calls["started"] - calls["finished"]
        counts["not_started"] = len(candidates) - calls["started"]
    counts["judged"] = len(judged)
    counts["candidates"] = len(candidates)
    counts["concurrency"] = threads
    counts["snippet_chars"] = max_chars
    if unconfigured.is_set():
        return Reranking("skipped", "no chat model configured", detail=counts)
    out_of_time = time.monotonic() >= deadline and len(judged) < len(candidates)
    if not judged:
        if out_of_time or counts["timed_out"]:
            reason = (
                f"chat model timed out after {budget_s:g} s ({_pending(counts)}); "
                "the fusion order stands"
            )
            return Reranking("skipped", reason, detail=counts)
        if counts["unreachable"] or counts["busy"]:
            return Reranking("skipped", f"chat model unavailable: {first_error}", detail=counts)
        if counts["errors"]:
            return Reranking("failed", f"chat model error: {first_error}", detail=counts)
        return Reranking("failed", "the chat model's answers held no yes/no verdict", detail=counts)
    reason = ""
    if len(judged) < len(candidates):
        why = (
            f"the {budget_s:g} s budget ran out: {_pending(counts)}"
            if out_of_time
            else "the others failed"
        )
        reason = f"{len(judged)} of {len(candidates)} candidates judged ({why})"
    return Reranking("ran", reason, scores=judged, detail=counts)


def _pending(counts: dict[str, int]) -> str:
    return (
        f"{counts['in_flight']} still waiting on the model, {counts['timed_out']} timed out, "
        f"{counts['not_started']} never started"
    )


def _is_timeout(exc: Exception) -> bool:
    """A call that ran out of time (``llm.http``: "no answer within ...", "... timed out")."""
    text = str(exc).lower()
    return "no answer within" in text or "timed out" in text or "timeout" in text
