"""Ask: retrieve -> (HyDE) -> (call-graph expansion) -> prompt -> answer -> resolve citations.

One plain function, ``answer_question(AskRequest) -> AskResult``, behind ``POST /api/ask``,
``manage.py ask`` and the evaluation check. The chat model sees numbered snippets and cites
numbers; every location in the result comes from the cited chunks' own rows. With no chat
model reachable (or an unusable answer) ``AskFailed`` is raised carrying everything that was
retrieved, so callers can still show where to look -- an answer is never made up.

The steps are also public for ``search.ask.stream`` (the server-sent-events answer):
``prepare_answer`` (retrieve, size the prompt), then the model, then ``finish_answer`` or
``ask_failure``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.conf import settings

from accounts.visibility import Viewer
from llm.streaming import StreamStats
from search import contract
from search.ask.callgraph import ExpansionLimits, expand_call_graph
from search.ask.citations import parse_citations
from search.ask.context import ContextSnippet, distinct, load_snippets, name_links
from search.ask.errors import AskFailed
from search.ask.hyde import fuse_with_question, run_hyde
from search.ask.prompt import MAX_ANSWER_TOKENS, Prompt, build_prompt
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
        snippets = name_links(distinct(snippets + added), request.viewer)
        stage.ms = timings["expand_ms"] = _ms(started)
        trace.append(stage)
    return snippets


@dataclass
class PreparedAnswer:
    """Retrieval done and the prompt built: what the model is asked, and the result so far."""

    result: AskResult
    stage: StageTrace  # the "answer" stage, filled in as the model answers
    prompt: Prompt | None  # None: nothing to answer from, the model is not asked
    started: float

    @property
    def max_tokens(self) -> int:
        return self.prompt.answer_tokens if self.prompt else MAX_ANSWER_TOKENS


def context_window(chat: Any) -> int:
    tokens = getattr(chat, "context_tokens", None)
    return int(tokens) if isinstance(tokens, int) and tokens > 0 else 8192


def prepare_answer(request: AskRequest, chat: Any) -> PreparedAnswer:
    """Retrieve, then size the prompt to the model's context window (whole snippets)."""
    started = time.perf_counter()
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
    stage = StageTrace(name="answer", status="ran")
    trace.append(stage)
    if not context:
        stage.status, stage.reason = "skipped", "no snippet to answer from"
        result.answer = {"text": NO_CONTEXT_ANSWER, "markdown": NO_CONTEXT_ANSWER, "raw": ""}
        result.warnings.append("no indexed code matched the question; the model was not asked")
        timings["total_ms"] = _ms(started)
        return PreparedAnswer(result, stage, None, started)
    window = context_window(chat)
    prompt = build_prompt(request.question, context, context_tokens=window)
    result.context = context[: prompt.given]
    stage.detail.update(prompt.detail(window))
    if prompt.left_out:
        result.warnings.append(
            f"{prompt.left_out} of {len(context)} retrieved snippets left out to fit the "
            f"model's {window}-token context (LLM_CONTEXT_TOKENS)"
        )
    return PreparedAnswer(result, stage, prompt, started)


def ask_failure(prepared: PreparedAnswer, exc: Exception, model_started: float) -> AskFailed:
    """The AskFailed for a model error (``exc``) during the answer, with what was retrieved."""
    from llm import ModelBusy, ModelResponseError

    result, reason = prepared.result, str(exc)
    _fail(prepared.stage, result, result.timings, model_started, prepared.started, reason)
    if isinstance(exc, ModelBusy):
        return AskFailed("model_busy", f"the chat model is busy: {exc}", result)
    if isinstance(exc, ModelResponseError):
        message = f"the chat model answered with something unusable: {exc}"
        return AskFailed("model_bad_response", message, result)
    return AskFailed("model_unavailable", f"no chat model could answer: {exc}", result)


def finish_answer(
    prepared: PreparedAnswer, raw: Any, stats: StreamStats | None, model_started: float
) -> AskResult:
    """Resolve the citations of the model's whole answer ``raw``; AskFailed if it is empty."""
    result, stage, timings = prepared.result, prepared.stage, prepared.result.timings
    context = result.context
    timings["model_ms"] = stage.ms = _ms(model_started)
    if stats is not None and stats.first_piece_s is not None:
        timings["first_token_ms"] = round(stats.first_piece_s * 1000, 1)
    if not isinstance(raw, str) or not raw.strip():
        _fail(stage, result, timings, model_started, prepared.started, "empty answer")
        raise AskFailed("model_bad_response", "the chat model's answer was empty", result)

    parsed = parse_citations(raw, len(context), link_for=lambda n: context[n - 1].permalink)
    result.cited = parsed.cited
    result.answered = True
    result.answer = {"text": parsed.text, "markdown": parsed.markdown, "raw": raw}
    stage.detail.update({"cited": parsed.cited, "invalid": parsed.invalid})
    if stats is not None:
        stage.detail.update({"streamed": True, "finish_reason": stats.finish_reason})
        if stats.finish_reason == "length":
            result.warnings.append(
                f"the answer was cut at the {prepared.max_tokens}-token limit; it may be unfinished"
            )
        elif stats.finish_reason == "time":
            result.warnings.append(
                f"the answer was cut at the {answer_timeout():g} s limit "
                "(REPO_SEARCH_ASK_TIMEOUT_SECS); it may be unfinished"
            )
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
    timings["total_ms"] = _ms(prepared.started)
    return result


def answer_question(request: AskRequest, *, chat: Any = None) -> AskResult:
    """Answer ``request.question`` from the indexed code, citing snippets by number.

    Raises ``search.retrieval.scope.UnknownRepositories`` for unknown repository ids and ``AskFailed``
    when the chat model is unreachable, busy or answers with nothing usable. The answer is
    read as a stream (when the client can), so a slow model that keeps writing is bounded by
    the ask timeout, not by the per-read ``LLM_TIMEOUT_SECS``.
    """
    from llm import ModelError, get_chat

    chat = chat if chat is not None else get_chat()
    prepared = prepare_answer(request, chat)
    if prepared.prompt is None:
        return prepared.result
    messages = prepared.prompt.messages
    model_started = time.perf_counter()
    stats: StreamStats | None = None
    try:
        if hasattr(chat, "stream"):
            stats = StreamStats()
            raw: Any = "".join(
                chat.stream(
                    messages,
                    max_tokens=prepared.max_tokens,
                    timeout=answer_timeout(),
                    stats=stats,
                )
            )
        else:  # a chat object with only the plain call (evaluation doubles)
            raw = chat.chat(messages, max_tokens=prepared.max_tokens, timeout=answer_timeout())
    except ModelError as exc:
        raise ask_failure(prepared, exc, model_started) from exc
    return finish_answer(prepared, raw, stats, model_started)


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
