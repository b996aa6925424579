"""Ask: retrieve -> (HyDE) -> (call-graph expansion) -> prompt -> answer -> resolve citations.

One plain function, ``answer_question(AskRequest) -> AskResult``, behind ``POST /api/ask``,
``manage.py ask`` and the evaluation check. The chat model sees numbered snippets and cites
numbers; every location in the result comes from the cited chunks' own rows. With no chat
model reachable (or an unusable answer) ``AskFailed`` is raised carrying everything that was
retrieved, so callers can still show where to look -- an answer is never made up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.conf import settings

from accounts.visibility import Viewer
from search import contract
from search.ask.callgraph import ExpansionLimits, expand_call_graph
from search.ask.citations import parse_citations
from search.ask.context import ContextSnippet, distinct, load_snippets
from search.ask.hyde import fuse_with_question, run_hyde
from search.ask.prompt import build_messages
from search.executor import SearchExecutor
from search.types import StageTrace

NO_CONTEXT_ANSWER = "No indexed code matched the question, so there is nothing to answer from."


@dataclass
class AskRequest:
    question: str
    repo_ids: list[UUID] | None = None
    k: int = 8  # retrieved snippets given to the model
    expand: bool = False
    expand_depth: int = 2
    hyde: bool = False
    include_tests: bool | None = None
    include_docs: bool | None = None
    # Who asks: retrieval, HyDE and call-graph expansion keep to what this viewer may see, so
    # the model is never shown a restricted repository's code (default: unrestricted only).
    viewer: Viewer = field(default_factory=Viewer)


@dataclass
class AskResult:
    question: str
    answered: bool
    answer: dict[str, str] | None  # text (markers [1]..), markdown (links), raw (model's text)
    context: list[ContextSnippet]  # what the model was given, numbered from 1
    cited: list[int]  # context numbers in order of first citation
    warnings: list[str] = field(default_factory=list)
    trace: list[StageTrace] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def sources(self) -> list[dict[str, Any]]:
        """The cited snippets, in citation order, located from chunk metadata."""
        return [
            self.context[number - 1].as_source(position, number)
            for position, number in enumerate(self.cited, start=1)
        ]

    @property
    def retrieved(self) -> list[dict[str, Any]]:
        """Every snippet the model was (or would have been) given."""
        return [s.as_source(None, i) for i, s in enumerate(self.context, start=1)]

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answered": self.answered,
            "answer": self.answer,
            "sources": self.sources,
            "snippets": [
                {**s.as_source(None, i), "cited": i in self.cited}
                for i, s in enumerate(self.context, start=1)
            ],
            "warnings": self.warnings,
            "trace": [
                {
                    "name": t.name,
                    "status": t.status,
                    "reason": t.reason,
                    "ms": t.ms,
                    "detail": t.detail,
                }
                for t in self.trace
            ],
            "timings": self.timings,
        }


class AskFailed(Exception):
    """The model could not answer; ``result`` holds what was retrieved (never an answer)."""

    def __init__(self, code: str, message: str, result: AskResult) -> None:
        super().__init__(message)
        self.code = code  # "model_unavailable" | "model_bad_response"
        self.message = message
        self.result = result


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def answer_timeout() -> float:
    return float(settings.REPO_SEARCH_ASK_TIMEOUT_SECS)


def retrieve_context(
    request: AskRequest, chat: Any, trace: list[StageTrace], timings: dict[str, float]
) -> list[ContextSnippet]:
    """The snippets for ``request``: executor hits (fused with HyDE's), then expansion."""
    search_request = contract.search_request(
        {
            "query": request.question,
            "limit": request.k,
            "repo_ids": request.repo_ids,
            "include_tests": request.include_tests,
            "include_docs": request.include_docs,
        },
        viewer=request.viewer,
    )
    started = time.perf_counter()
    result = SearchExecutor(chat=chat).run(search_request)  # raises UnknownRepositories
    timings["retrieve_ms"] = _ms(started)
    trace.extend(result.trace)
    scores = {h.chunk_id: h.combined_score for h in result.hits}
    order = [h.chunk_id for h in result.hits]
    if request.hyde:
        started = time.perf_counter()
        outcome = run_hyde(request.question, search_request, chat, None, limit=request.k * 2)
        trace.append(outcome.trace)
        if outcome.ranked:
            fused = fuse_with_question(result.hits, outcome.ranked, limit=request.k)
            order = [cid for cid, _ in fused]
            scores = dict(fused)
        timings["hyde_ms"] = _ms(started)
    snippets = load_snippets(order, request.viewer, scores=scores)
    hyde_only = set(order) - {h.chunk_id for h in result.hits}
    for snippet in snippets:
        if snippet.chunk_id in hyde_only:
            snippet.origin = "hyde"
    if request.expand:
        started = time.perf_counter()
        stage = StageTrace(name="callgraph", status="ran")
        added = expand_call_graph(
            snippets, request.viewer, ExpansionLimits(depth=request.expand_depth)
        )
        stage.detail = {
            "depth": request.expand_depth,
            "callees": sum(1 for s in added if s.origin == "callee"),
            "callers": sum(1 for s in added if s.origin == "caller"),
            "added": [f"{s.origin}: {s.symbol or s.path} (via {s.via})" for s in added],
        }
        if not added:
            stage.status, stage.reason = "skipped", "no call leads to an indexed definition"
        snippets = distinct(snippets + added)
        stage.ms = timings["expand_ms"] = _ms(started)
        trace.append(stage)
    return snippets


def answer_question(request: AskRequest, *, chat: Any = None) -> AskResult:
    """Answer ``request.question`` from the indexed code, citing snippets by number.

    Raises ``search.retrieval.scope.UnknownRepositories`` for unknown repository ids and ``AskFailed``
    when the chat model is unreachable or answers with nothing usable.
    """
    from llm import ModelError, ModelResponseError, get_chat

    started = time.perf_counter()
    chat = chat if chat is not None else get_chat()
    trace: list[StageTrace] = []
    timings: dict[str, float] = {}
    context = retrieve_context(request, chat, trace, timings)
    result = AskResult(
        question=request.question,
        answered=False,
        answer=None,
        context=context,
        cited=[],
        trace=trace,
        timings=timings,
    )
    answer_stage = StageTrace(name="answer", status="ran")
    trace.append(answer_stage)
    if not context:
        answer_stage.status, answer_stage.reason = "skipped", "no snippet to answer from"
        result.answer = {"text": NO_CONTEXT_ANSWER, "markdown": NO_CONTEXT_ANSWER, "raw": ""}
        result.warnings.append("no indexed code matched the question; the model was not asked")
        timings["total_ms"] = _ms(started)
        return result

    model_started = time.perf_counter()
    try:
        messages = build_messages(request.question, context)
        raw = chat.chat(messages, max_tokens=900, timeout=answer_timeout())
    except ModelResponseError as exc:
        _fail(answer_stage, result, timings, model_started, started, str(exc))
        message = f"the chat model answered with something unusable: {exc}"
        raise AskFailed("model_bad_response", message, result) from exc
    except ModelError as exc:
        _fail(answer_stage, result, timings, model_started, started, str(exc))
        message = f"no chat model could answer: {exc}"
        raise AskFailed("model_unavailable", message, result) from exc
    timings["model_ms"] = answer_stage.ms = _ms(model_started)
    if not isinstance(raw, str) or not raw.strip():
        _fail(answer_stage, result, timings, model_started, started, "empty answer")
        raise AskFailed("model_bad_response", "the chat model's answer was empty", result)

    parsed = parse_citations(raw, len(context), link_for=lambda n: context[n - 1].permalink)
    result.cited = parsed.cited
    result.answered = True
    result.answer = {"text": parsed.text, "markdown": parsed.markdown, "raw": raw}
    answer_stage.detail = {"cited": parsed.cited, "invalid": parsed.invalid}
    if parsed.invalid:
        numbers = ", ".join(f"[{n}]" for n in parsed.invalid)
        result.warnings.append(
            f"removed citation(s) {numbers}: only [1]..[{len(context)}] were given to the model"
        )
    if parsed.removed_locations:
        result.warnings.append(
            "removed location(s) the model wrote itself (unverified): "
            + ", ".join(parsed.removed_locations[:5])
        )
    if not parsed.cited:
        result.warnings.append("the answer cites none of the snippets; treat it with care")
    timings["total_ms"] = _ms(started)
    return result


def _fail(
    stage: StageTrace,
    result: AskResult,
    timings: dict[str, float],
    model_started: float,
    started: float,
    reason: str,
) -> None:
    stage.status, stage.reason = "failed", reason[:300]
    timings["model_ms"] = stage.ms = _ms(model_started)
    timings["total_ms"] = _ms(started)
