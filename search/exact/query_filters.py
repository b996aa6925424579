"""The query language's vocabulary: its filters, their GitHub/Sourcegraph aliases, the other code
hosts' filters it refuses (with what to write instead), language names, and the nearest names
for a typo.

This is the one list every caller checks against: the parser (``search.exact.query_language``),
its errors (they list ``FILTER_NAMES`` and name the closest), the language fields of the search
and symbol APIs (``checked_language``), and the manual's query-language page
(``tests/search/test_query_language_page.py`` checks the page against these tables).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from indexing.languages import EXTENSIONS, FILENAMES, INTERPRETERS
from search.exact.errors import QueryRejected

# The filters, by their canonical names, and the spellings other code hosts use for them.
FILTERS = ("repo", "lang", "file", "case", "branch", "sym", "type", "content")
ALIASES = {"language": "lang", "path": "file", "symbol": "sym"}
NEGATABLE = frozenset({"repo", "lang", "file", "content"})
TYPES = ("symbol", "file", "semantic")
TYPE_ALIASES = {"path": "file"}  # Sourcegraph's type:path searches file names

# What a filter prefix may be written as, canonical names first.
FILTER_NAMES = (*FILTERS, *ALIASES)

# Filters of GitHub's and Sourcegraph's languages that reposearch has no counterpart for: a word
# starting with one is refused saying what to write instead, never searched for as text.
FOREIGN_FILTERS = {
    "org": "repo:OWNER/* (repositories are named by their path)",
    "user": "repo:OWNER/* (repositories are named by their path)",
    "is": "nothing: every search covers the indexed repositories you may see",
    "fork": "nothing: forks are searched like any repository that is indexed",
    "archived": "nothing: every indexed repository is searched",
    "visibility": "nothing: you see the repositories your groups may see",
    "context": "nothing: every search covers the indexed repositories you may see",
    "enterprise": "nothing: every search covers the indexed repositories you may see",
    "rev": "branch:NAME",
    "revision": "branch:NAME",
    "repohasfile": "type:file NAME to find the file, then repo: to search there",
    "select": "type:symbol or type:file",
    "patterntype": '"quoted text" for exact text, /regex/ for a regular expression',
    "count": "nothing: every page says the total, and next_cursor pages through the rest",
    "timeout": "nothing: the search has a time budget of its own",
}

# Language ids the indexer assigns (``indexing.languages``): what ``lang:`` values are checked
# against, with the spellings people use for them.
KNOWN_LANGUAGES = frozenset({*EXTENSIONS.values(), *FILENAMES.values(), *INTERPRETERS.values()})
LANGUAGE_ALIASES = {
    **{ext: lang for ext, lang in EXTENSIONS.items() if ext not in KNOWN_LANGUAGES},
    "golang": "go",
    "c#": "csharp",
    "f#": "fsharp",
    "objc": "objective-c",
    "objective-c++": "objective-cpp",
    "node": "javascript",
    "vimscript": "vim",
    "batchfile": "batch",
    "make": "makefile",
    "docker": "dockerfile",
    "plaintext": "text",
}


def canonical_filter(name: str) -> str | None:
    """The filter ``name`` (any case, canonical or alias) stands for, or None."""
    lowered = name.lower()
    return lowered if lowered in FILTERS else ALIASES.get(lowered)


def _distance_at_most_one(a: str, b: str) -> bool:
    """Within one insertion, deletion, substitution or swap of neighbours."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diffs = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diffs) == 1:
            return True
        i = diffs[0]
        return len(diffs) == 2 and diffs[1] == i + 1 and a[i] == b[i + 1] and a[i + 1] == b[i]
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def near_filter(name: str) -> str | None:
    """The filter name one edit away from ``name`` (three letters or more), or None: a prefix
    that is a typo of a filter is refused rather than searched for as text."""
    lowered = name.lower()
    if len(lowered) < 3:
        return None
    return next((known for known in FILTER_NAMES if _distance_at_most_one(lowered, known)), None)


def normalize_language(value: str) -> str | None:
    """The language id ``value`` names (``Python``, ``py``, ``C++``, ``golang``), or None."""
    lowered = value.strip().lower()
    if lowered in KNOWN_LANGUAGES:
        return lowered
    return LANGUAGE_ALIASES.get(lowered)


def closest(value: str, names: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``names`` nearest to ``value`` (case-insensitive), best first: those it
    starts, then those similar enough (``difflib``), then those containing it."""
    by_lower: dict[str, str] = {}
    for name in names:
        by_lower.setdefault(name.lower(), name)
    lowered = value.lower()
    found = [name for low, name in sorted(by_lower.items()) if low.startswith(lowered)]
    found += [by_lower[m] for m in difflib.get_close_matches(lowered, by_lower, n=n, cutoff=0.6)]
    found += [name for low, name in sorted(by_lower.items()) if lowered in low]
    return list(dict.fromkeys(found))[:n]


def closest_languages(value: str) -> list[str]:
    """Language ids near ``value`` (``pyton`` -> ``python``)."""
    lowered = value.strip().lower()
    ids = closest(lowered, KNOWN_LANGUAGES)
    aliased = [LANGUAGE_ALIASES[a] for a in closest(lowered, LANGUAGE_ALIASES, n=1)]
    return list(dict.fromkeys([*ids, *aliased]))[:3]


def checked_language(value: str, field: str) -> str:
    """The language id ``value`` names (``Python``, ``py`` -> ``python``); an unknown one is
    ``QueryRejected`` (``unknown_language``) naming ``field`` and the nearest ids. For the
    request fields (a search's ``languages``, the symbol API's ``lang``); the query language's
    ``lang:`` is refused by its parser, which also says where in the query."""
    language = normalize_language(value)
    if language is not None:
        return language
    nearest = closest_languages(value)
    hint = f" — did you mean {nearest[0]}?" if nearest else ""
    raise QueryRejected(
        "unknown_language",
        f"unknown language {value!r} in {field}{hint}",
        {
            "field": field,
            "value": value,
            "suggestions": nearest,
            **({"suggestion": nearest[0]} if nearest else {}),
        },
    )
