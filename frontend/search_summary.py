"""What the results page says about the search itself, beside its hits (``frontend.results``):
which mode ran, the notices of filters that matched nothing with their suggested queries, and
the plain words for what was searched that a "no results" message shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from frontend.pipeline import _text

MODE_LABELS = {
    "hybrid": "natural language: full-text and vector search",
    "exact": "exact text",
    "regex": "regular expression",
    "symbol": "symbol definitions",
    "file": "file names",
}


def mode_label(mode: Any) -> str:
    """Which search ran, in words (the response's ``mode``; "" when it names none we know)."""
    return MODE_LABELS.get(_text(mode), "")


@dataclass
class Notice:
    """A filter that matched no file, and the search with the filter to write instead."""

    message: str
    suggested_query: str = ""
    url: str = ""


def notices(raw: Any) -> list[Notice]:
    """The response's ``notices`` (the filters that matched no file), each with a link that
    searches for its ``suggested_query`` when it has one."""
    found = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not item.get("message"):
            continue
        suggested = _text(item.get("suggested_query"))
        url = reverse("frontend:search") + "?" + urlencode({"q": suggested}) if suggested else ""
        found.append(Notice(str(item["message"]), suggested, url))
    return found


def describe_filters(
    request: Mapping[str, Any], repo_names: Sequence[str], *, ranked: bool = True
) -> list[str]:
    """Plain words for what was searched, for the "no results" message. A search that is not
    ``ranked`` (exact, regex, symbol, file name) read every indexed file, tests and docs too,
    with no full-text or vector method: it says which search it was instead."""
    parts: list[str] = []
    if not ranked:
        return [*_scope_words(request, repo_names), "every indexed file, tests and docs too"]
    methods = [
        label
        for key, label in (
            ("use_bm25", "full-text"),
            ("use_vector", "vector"),
            ("use_rerank", "rerank"),
            ("use_expansion", "expansion"),
        )
        if request.get(key)
    ]
    parts.append("methods: " + (", ".join(methods) if methods else "none"))
    parts.extend(_scope_words(request, repo_names))
    for key, noun in (("include_tests", "tests"), ("include_docs", "docs")):
        value = request.get(key)
        if value is None:
            parts.append(f"{noun} left out unless the query is about them")
        else:
            parts.append(f"{noun} {'included' if value else 'left out'}")
    return parts


def _scope_words(request: Mapping[str, Any], repo_names: Sequence[str]) -> list[str]:
    parts = []
    if repo_names:
        parts.append("repositories: " + ", ".join(repo_names))
    if request.get("languages"):
        parts.append("languages: " + ", ".join(map(str, request["languages"])))
    if request.get("paths"):
        parts.append("paths: " + ", ".join(map(str, request["paths"])))
    return parts
