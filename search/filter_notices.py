"""Why an empty answer is empty, when a filter is why.

A ``file:`` glob with a typo in it, or ``lang:go`` on a Python repository, would otherwise
answer "no results" as if the code held nothing that matches. When the first page of a search
comes back empty, each filter is checked against the indexed files of the repositories (and
branches) searched: a glob or language that matches none of them is named in the answer's
``notices``, with what would match (the glob at any depth, the path in another case, the
languages that are there). When every filter matches files but together they match none, that is
said too. Each check reads one file at most; a search with results asks nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from django.db import OperationalError

from search.exact.candidates import CandidateScope
from search.exact.engine import QUERY_CANCELED
from search.retrieval.db import search_cursor
from search.retrieval.query import InvalidGlob, glob_to_regex

_FILES_SQL = "SELECT {select} FROM indexing_sourcefile c {live} WHERE {scope} {tail}"
MOST_LANGUAGES = 5
TIMEOUT_MS = 1000  # per check: past it, the answer goes without its notices


def filter_notices(
    scope: CandidateScope, globs: Sequence[str], languages: Sequence[str]
) -> list[dict[str, str]]:
    """``[{"filter", "message"}]`` for the filters of ``scope`` that leave it no file: each
    ``file:`` glob of ``globs`` and ``lang:`` of ``languages`` matching no file on its own, else
    the filters together (exclusions included) when they do. Empty when a check runs out of time."""
    try:
        return _notices(scope, globs, languages)
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == QUERY_CANCELED:
            return []  # out of time: an empty answer is not worth an error
        raise


def _notices(
    scope: CandidateScope, globs: Sequence[str], languages: Sequence[str]
) -> list[dict[str, str]]:
    filtered = bool(globs or languages or scope.exclude_path_regex or scope.exclude_languages)
    if not filtered or not scope.repo_ids:
        return []
    bare = replace(
        scope, languages=None, exclude_languages=None, path_regex=None, exclude_path_regex=None
    )
    if _first_path(bare) is None:
        return []  # nothing indexed there at all: no filter's doing
    where = _where(scope)
    notices = []
    for glob in globs:
        regex = _regex(glob)
        if regex is None or _first_path(replace(bare, path_regex=regex)) is not None:
            continue
        notices.append(
            {
                "filter": f"file:{glob}",
                "message": f"file:{glob} matches no indexed file in {where}{_glob_hint(bare, glob)}",
            }
        )
    for language in languages:
        if _first_path(replace(bare, languages=[language.lower()])) is None:
            present = ", ".join(f"lang:{name}" for name in _languages(bare))
            notices.append(
                {
                    "filter": f"lang:{language}",
                    "message": f"lang:{language} matches no indexed file in {where}"
                    + (f"; its languages: {present}" if present else ""),
                }
            )
    if not notices and _first_path(scope) is None:
        notices.append(
            {
                "filter": "",
                "message": f"the file and language filters together match no indexed file in"
                f" {where}; each matches files on its own",
            }
        )
    return notices


def _where(scope: CandidateScope) -> str:
    count = len(scope.repo_ids)
    repositories = "the repository searched" if count == 1 else f"the {count} repositories searched"
    return repositories + (" on the branches searched" if scope.branches is not None else "")


def _regex(glob: str) -> str | None:
    try:
        return glob_to_regex(glob)
    except InvalidGlob:
        return None  # refused before the search ran; nothing to add


def _glob_hint(bare: CandidateScope, glob: str) -> str:
    """What would match: the glob's last part at any depth, else the glob in another case."""
    pattern = glob.strip("/")
    if "/" in pattern and not glob.startswith("**/"):
        tail = pattern.rsplit("/", 1)[1] + ("/" if glob.endswith("/") else "")
        regex = _regex(f"**/{tail}")
        found = _first_path(replace(bare, path_regex=regex)) if regex else None
        if found is not None:
            return f" — did you mean file:**/{tail}? (it matches {found})"
    regex = _regex(glob)
    found = _first_path(bare, regex, case_insensitive=True) if regex else None
    if found is not None:
        return f" — paths match case-sensitively; in another case it would match {found}"
    return ""


def _first_path(
    scope: CandidateScope, extra_regex: str | None = None, *, case_insensitive: bool = False
) -> str | None:
    """The first indexed path of ``scope`` (also matching ``extra_regex``), or None."""
    scope_sql, params = scope.sql()
    if extra_regex is not None:
        scope_sql += " AND c.path ~* %s" if case_insensitive else " AND c.path ~ %s"
        params.append(extra_regex)
    row = _fetch(scope, "c.path", scope_sql, params, "ORDER BY c.path LIMIT 1")
    return str(row[0][0]) if row else None


def _languages(scope: CandidateScope) -> list[str]:
    """The scope's most common languages, most files first."""
    scope_sql, params = scope.sql()
    rows = _fetch(
        scope,
        "lower(c.language), count(*)",
        scope_sql + " AND c.language <> ''",
        params,
        f"GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT {MOST_LANGUAGES}",
    )
    return [str(name) for name, _count in rows]


def _fetch(
    scope: CandidateScope, select: str, scope_sql: str, params: list[Any], tail: str
) -> list[tuple[Any, ...]]:
    live, live_params = scope.live_join("c.id")
    sql = _FILES_SQL.format(select=select, live=live, scope=scope_sql, tail=tail)
    with search_cursor(TIMEOUT_MS) as cursor:
        cursor.execute(sql, [*live_params, *params])
        return list(cursor.fetchall())
