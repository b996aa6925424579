"""Turns a ``POST /api/ask`` response (or its 502/503 error) into what the Ask page draws.

The page calls the ask API like any other client and posts the JSON back here
(``frontend.ask_views.render_answer``), the same way the search page has its results rendered.
The model's text is never trusted as HTML: it is escaped piece by piece, and only three things
become markup -- fenced code blocks, inline ``code`` and ``- `` bullet lists -- plus the
``[n]`` citation markers, which become links to the file view of source ``n`` at its lines.
Those links are built from the source's repository id, path and line numbers (chunk metadata
the API resolved), never from anything the model wrote.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from frontend.pipeline import PipelineColumn, _int, _text, build_pipeline, format_ms
from frontend.results import file_view_url

MAX_SOURCES = 60
MAX_ANSWER_CHARS = 40_000
CITATION = re.compile(r"\[(\d{1,4})\]")
COMMIT = re.compile(r"[0-9a-f]{7,64}")  # a cited snippet's commit; anything else links HEAD
INLINE_CODE = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```[^\n]*\n(.*?)(?:^```[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s+")
TIMING_LABELS = {
    "retrieve_ms": "retrieval",
    "hyde_ms": "HyDE",
    "expand_ms": "call graph",
    "first_token_ms": "first word",
    "model_ms": "model",
    "total_ms": "total",
}
ORIGIN_LABELS = {"hyde": "found by HyDE", "callee": "called by", "caller": "calls"}
# The ask pipeline's own stages; "expansion" is the search executor's query expansion.
STAGE_LABELS = {"callgraph": "call graph", "hyde": "HyDE", "expansion": "query expansion"}
FAILURE_TITLES = {
    "model_unavailable": "No chat model answered",
    "model_bad_response": "The chat model's answer was unusable",
    "model_busy": "The chat model is busy with other questions",
}


@dataclass
class SourceView:
    """One source: where it is (from chunk metadata) and the links to read it."""

    number: int | None  # the [n] in the answer; None for a snippet that was not cited
    context_number: int | None  # the snippet's number in the prompt
    repo_name: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    commit: str
    origin: str
    via: str
    file_url: str
    upstream_url: str | None

    @property
    def lines(self) -> str:
        """``start-end`` (``start`` for one line)."""
        if self.end_line > self.start_line:
            return f"{self.start_line}-{self.end_line}"
        return str(self.start_line)

    @property
    def location(self) -> str:
        return f"{self.path}:{self.lines}"

    @property
    def short_commit(self) -> str:
        return self.commit[:7]

    @property
    def origin_label(self) -> str:
        """Why an expansion or HyDE snippet is here ("called by configure_pool")."""
        label = ORIGIN_LABELS.get(self.origin, "")
        if label and self.via and self.origin in ("callee", "caller"):
            return f"{label} {self.via}"
        return label

    @property
    def description(self) -> str:
        """What a screen reader says for a citation link."""
        return f"source {self.number}: {self.repo_name} {self.path} lines {self.lines}"


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _web_url(value: Any) -> str | None:
    """Only http(s) links are drawn (a javascript: URL must never become an href)."""
    url = _text(value)
    return url if re.match(r"https?://[^\s\"'<>]+$", url) else None


def build_source(item: Mapping[str, Any]) -> SourceView | None:
    repo_id = _text(item.get("repo_id"))
    path = _text(item.get("path"))
    start = _int(item.get("start_line"))
    end = max(_int(item.get("end_line"), start), start)
    if not path or start < 1:
        return None
    number = item.get("number")
    context_number = item.get("context_number")
    commit = _text(item.get("commit"))
    return SourceView(
        number=number if isinstance(number, int) and not isinstance(number, bool) else None,
        context_number=context_number if isinstance(context_number, int) else None,
        repo_name=_text(item.get("repo_name")),
        path=path,
        start_line=start,
        end_line=end,
        symbol=_text(item.get("symbol")),
        kind=_text(item.get("kind")),
        commit=commit,
        origin=_text(item.get("origin")) or "search",
        via=_text(item.get("via")),
        file_url=(
            file_view_url(repo_id, path, start, end, commit if COMMIT.fullmatch(commit) else "")
            if _is_uuid(repo_id)
            else ""
        ),
        upstream_url=_web_url(item.get("upstream_url")),
    )


def build_sources(items: Any) -> list[SourceView]:
    if not isinstance(items, list):
        return []
    views = [build_source(item) for item in items[:MAX_SOURCES] if isinstance(item, Mapping)]
    return [view for view in views if view is not None]


def _citation(match: re.Match[str], by_number: Mapping[int, SourceView]) -> SafeString:
    source = by_number.get(int(match.group(1)))
    if source is None or not source.file_url:
        return format_html("{}", match.group(0))  # a marker with nowhere to go stays plain text
    return format_html(
        '<a class="cite" href="{}" title="{} {}" aria-label="{}" data-source="{}">[{}]</a>',
        source.file_url,
        source.repo_name,
        source.location,
        source.description,
        source.number,
        source.number,
    )


def _inline(text: str, by_number: Mapping[int, SourceView]) -> SafeString:
    """Escaped text with `code` spans and linked [n] markers (never inside code)."""
    parts: list[str] = []
    position = 0
    for match in INLINE_CODE.finditer(text):
        parts.append(_cited(text[position : match.start()], by_number))
        parts.append(format_html("<code>{}</code>", match.group(1)))
        position = match.end()
    parts.append(_cited(text[position:], by_number))
    return mark_safe("".join(parts))  # noqa: S308 - every part was escaped by format_html


def _cited(text: str, by_number: Mapping[int, SourceView]) -> str:
    parts: list[str] = []
    position = 0
    for match in CITATION.finditer(text):
        parts.append(format_html("{}", text[position : match.start()]))
        parts.append(_citation(match, by_number))
        position = match.end()
    parts.append(format_html("{}", text[position:]))
    return "".join(parts)


def _prose(block: str, by_number: Mapping[int, SourceView]) -> str:
    """Paragraphs (blank-line separated), bullet lists, and line breaks inside paragraphs."""
    html: list[str] = []
    for paragraph in re.split(r"\n\s*\n", block.strip("\n")):
        lines = [line for line in paragraph.split("\n") if line.strip()]
        if not lines:
            continue
        if all(BULLET.match(line) for line in lines):
            items = format_html_join(
                "", "<li>{}</li>", ((_inline(BULLET.sub("", line), by_number),) for line in lines)
            )
            html.append(format_html("<ul>{}</ul>", items))
            continue
        body = mark_safe("<br>".join(_inline(line.strip(), by_number) for line in lines))  # noqa: S308
        html.append(format_html("<p>{}</p>", body))
    return "".join(html)


def render_answer(text: str, sources: Sequence[SourceView]) -> SafeString:
    """The answer as safe HTML: escaped model text, code blocks, and [n] linked to source n."""
    by_number = {source.number: source for source in sources if source.number is not None}
    text = text[:MAX_ANSWER_CHARS].replace("\r\n", "\n")
    html: list[str] = []
    position = 0
    for match in FENCE.finditer(text):
        html.append(_prose(text[position : match.start()], by_number))
        html.append(format_html('<pre class="answer-code"><code>{}</code></pre>', match.group(1)))
        position = match.end()
    html.append(_prose(text[position:], by_number))
    return mark_safe("".join(html))  # noqa: S308 - built only from format_html pieces


def summarise_timings(timings: Any) -> list[tuple[str, str]]:
    """(label, "120 ms") in pipeline order, then anything the API adds later."""
    if not isinstance(timings, Mapping):
        return []
    known = [key for key in TIMING_LABELS if key in timings]
    others = [key for key in timings if key not in TIMING_LABELS]
    summary = []
    for key in known + others:
        value = format_ms(timings.get(key))
        if value:
            summary.append((TIMING_LABELS.get(key, str(key).removesuffix("_ms")), value))
    return summary


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value[:20]] if isinstance(value, list) else []


@dataclass
class AskView:
    """Everything ``_answer.html`` draws for one ask."""

    question: str
    answer_html: SafeString | None
    sources: list[SourceView]
    uncited: list[SourceView]
    warnings: list[str]
    trace: Any
    timings: list[tuple[str, str]]
    failure_title: str = ""
    failure_message: str = ""


def build_answer(response: Mapping[str, Any]) -> AskView:
    """From a 200 response of ``POST /api/ask``."""
    sources = build_sources(response.get("sources"))
    snippets = response.get("snippets")
    uncited = build_sources(
        [s for s in snippets if isinstance(s, Mapping) and not s.get("cited")]
        if isinstance(snippets, list)
        else []
    )
    answer = response.get("answer")
    text = _text(answer.get("text")) if isinstance(answer, Mapping) else ""
    return AskView(
        question=_text(response.get("question")),
        answer_html=render_answer(text, sources) if text else None,
        sources=sources,
        uncited=uncited,
        warnings=_strings(response.get("warnings")),
        trace=response.get("trace"),
        timings=summarise_timings(response.get("timings")),
    )


def build_failure(error: Mapping[str, Any], question: str) -> AskView:
    """From the ``error`` of a 502/503: no answer, the retrieved sources, the pipeline."""
    details = error.get("details")
    details = details if isinstance(details, Mapping) else {}
    code = _text(error.get("code"))
    return AskView(
        question=question,
        answer_html=None,
        sources=[],
        uncited=build_sources(details.get("sources")),
        warnings=[],
        trace=details.get("trace"),
        timings=summarise_timings(details.get("timings")),
        failure_title=FAILURE_TITLES.get(code, "The question could not be answered"),
        failure_message=_text(error.get("message")),
    )


def _answer_stage(trace: Any) -> Mapping[str, Any]:
    entries = [e for e in trace if isinstance(e, Mapping)] if isinstance(trace, list) else []
    answer = next((e for e in reversed(entries) if e.get("name") == "answer"), {})
    detail = answer.get("detail")
    return detail if isinstance(detail, Mapping) else {}


def build_ask_pipeline(view: AskView) -> list[PipelineColumn]:
    """The search pipeline's diagram with the ask stages named plainly.

    The answer stage's own detail counts snippets by their prompt numbers, which differ from the
    [n] the reader sees (sources are renumbered in citation order), so it is restated in counts.
    """
    columns = build_pipeline(view.trace)
    invalid = _answer_stage(view.trace).get("invalid")
    for column in columns:
        for stage in column.stages:
            stage.label = STAGE_LABELS.get(stage.name, stage.label)
            if stage.name == "answer" and stage.status == "ran":
                given = len(view.sources) + len(view.uncited)
                stage.detail = f"cited {len(view.sources)} of {given} snippets"
                if isinstance(invalid, list) and invalid:
                    removed = " ".join(f"[{number}]" for number in invalid[:10])
                    stage.detail += f"; removed {removed}"
    return columns
