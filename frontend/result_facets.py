"""The facet filters of the results page: the API's ``facets`` (``search.facets``) as links
that add ``repo:NAME`` / ``lang:LANGUAGE`` to the query (the query language's filters, so the
search says what it applied, and the address can be shared)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from frontend.pipeline import _int, _text

MAX_ROWS = 12


@dataclass
class FacetLink:
    label: str
    files: int
    query: str  # the query with this filter added ("" when it is already applied)
    url: str


@dataclass
class Facets:
    basis: str  # "matching_files" | "ranked_candidates"
    is_lower_bound: bool
    repositories: list[FacetLink]
    languages: list[FacetLink]


def _applied(query: str, word: str) -> bool:
    return re.search(rf"(?:^|\s){re.escape(word)}(?:\s|$)", query, flags=re.I) is not None


def _link(query: str, label: str, files: int, word: str) -> FacetLink:
    if _applied(query, word):
        return FacetLink(label, files, "", "")
    narrowed = f"{query} {word}".strip()
    return FacetLink(
        label, files, narrowed, reverse("frontend:search") + "?" + urlencode({"q": narrowed})
    )


def facet_links(response: Mapping[str, Any], query: str) -> Facets | None:
    """The response's facets as filters of ``query``; None when it has none."""
    raw = response.get("facets")
    if not isinstance(raw, Mapping):
        return None

    def rows(key: str, label_key: str, prefix: str) -> list[FacetLink]:
        found = raw.get(key)
        links = []
        for row in found[:MAX_ROWS] if isinstance(found, list) else []:
            if isinstance(row, Mapping) and _text(row.get(label_key)):
                label = _text(row.get(label_key))
                links.append(_link(query, label, _int(row.get("files"), 0), f"{prefix}{label}"))
        return links

    repositories = rows("repositories", "name", "repo:")
    languages = rows("languages", "language", "lang:")
    if not repositories and not languages:
        return None
    return Facets(
        basis=_text(raw.get("basis")),
        is_lower_bound=raw.get("is_lower_bound") is True,
        repositories=repositories,
        languages=languages,
    )
