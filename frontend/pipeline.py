"""The pipeline diagram of a search or an ask: its trace's stages as labelled columns
(consecutive retrieval stages share one), with each stage's time, reason and detail in words.
Read defensively: a field the API leaves out shows as a blank, not an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RETRIEVAL_STAGES = frozenset({"fulltext", "vector"})
STAGE_LABELS = {"fulltext": "full-text"}


@dataclass
class StageView:
    name: str
    label: str
    status: str
    ms: str
    reason: str
    detail: str
    lists: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class PipelineColumn:
    stages: list[StageView] = field(default_factory=list)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def format_ms(value: Any) -> str:
    if value is None:
        return ""
    try:
        ms = float(value)
    except (TypeError, ValueError):
        return ""
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"


def _detail_value(value: Any) -> str | None:
    """A short text for one detail value; None for nested structures the diagram leaves out."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, list) and all(isinstance(item, (int, float, str)) for item in value):
        return "; ".join(map(str, value)) if value else "none"
    return None


def format_detail(detail: Any) -> str:
    if not isinstance(detail, Mapping):
        return _text(detail)[:200]
    parts = []
    for key, value in detail.items():
        text = _detail_value(value)
        if text is not None and key != "queries":
            parts.append(f"{str(key).replace('_', ' ')}: {text}")
    return ", ".join(parts)[:240]


def per_query_lists(detail: Any) -> list[tuple[str, str]]:
    """(query, "N hits") for each ranked list a retrieval stage built (the "times n" of the diagram)."""
    queries = detail.get("queries") if isinstance(detail, Mapping) else None
    if not isinstance(queries, list):
        return []
    lists = []
    for item in queries[:8]:
        if isinstance(item, Mapping):
            hits = item.get("hits")
            lists.append((_text(item.get("query"))[:80], "" if hits is None else f"{hits} hits"))
    return lists


def stage_label(name: str) -> str:
    return STAGE_LABELS.get(name, name.replace("_", " "))


def build_pipeline(trace: Any) -> list[PipelineColumn]:
    """Columns of the pipeline diagram: consecutive retrieval stages share one column."""
    if not isinstance(trace, list):
        return []
    columns: list[PipelineColumn] = []
    previous_was_retrieval = False
    for entry in trace:
        if not isinstance(entry, Mapping):
            continue
        name = _text(entry.get("name")) or "stage"
        status = _text(entry.get("status")).lower()
        stage = StageView(
            name=name,
            label=stage_label(name),
            status=status if status in ("ran", "skipped", "failed") else "ran",
            ms=format_ms(entry.get("ms")),
            reason=_text(entry.get("reason")),
            detail=format_detail(entry.get("detail")),
            lists=per_query_lists(entry.get("detail")),
        )
        is_retrieval = name in RETRIEVAL_STAGES
        if not (is_retrieval and previous_was_retrieval):
            columns.append(PipelineColumn())
        columns[-1].stages.append(stage)
        previous_was_retrieval = is_retrieval
    return columns
