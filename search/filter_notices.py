"""Filters that match no file, said in the answer instead of passing unnoticed.

A ``file:`` glob with a typo in it, or ``lang:go`` on a Python repository, would otherwise
answer "no results" as if the code held nothing that matches; a mistyped exclusion
(``-file:vendr/``) would leave the answer as it was, as if it had been applied. Each filter is
checked against the indexed files of the repositories (and branches) searched, on a search's
first page: an exclusion that excludes no file, always; when the page is empty, a glob or
language that matches no file, else the filters together when each matches files alone. Each
is named in the answer's ``notices`` with what would match (the path in another case, the
nearest spelling of a plain path, the glob at any depth, the languages that are there) and,
where one filter would, the query with it in place (``suggested_query``). The exclusions are
checked beside the search, the rest after an empty page; a search without a file or language
filter asks nothing, and a check that runs out of time leaves its notice or hint out. A filter
name written with nothing after its colon (``file: src/``), which the search took as a word, is
named too, with the query that gives it the next word as its value when the search takes that;
and a ``type:file`` search that found nothing names each word no indexed path holds, with the
nearest file name.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from django.db import OperationalError

from reposearch.domain_errors import DomainError
from search.exact.candidates import CandidateScope
from search.exact.engine import QUERY_CANCELED
from search.exact.errors import QueryRejected
from search.exact.filter_words import written_filters
from search.exact.mode_requests import Mode, candidate_scope, choose_mode
from search.exact.query_language import SearchQuery, parse_search_query
from search.exact.repositories import suggested_query
from search.retrieval.db import search_cursor, soon
from search.retrieval.query import InvalidGlob, glob_to_regex
from search.types import SearchRequest

T = TypeVar("T")
_FILES_SQL = "SELECT {select} FROM indexing_sourcefile c {live} WHERE {scope} {tail}"
# Names of about the same length and the same ending first (cheap), then trigram similarity on
# those only (OFFSET 0 keeps the planner from computing it on every file).
_NEAREST_SQL = """
    SELECT name FROM (
        SELECT {name} AS name FROM indexing_sourcefile c {live}
        WHERE {scope} AND length({name}) BETWEEN %s AND %s AND right(c.path, %s) = %s
        OFFSET 0
    ) f
    WHERE similarity(name, %s) >= 0.3
    GROUP BY name
    ORDER BY similarity(name, %s) DESC, name
    LIMIT {limit}
"""
MOST_LANGUAGES = 5
MIN_NEAREST = 4  # a plain path shorter than this gets no nearest spelling
NEAREST_CANDIDATES = 20
NEAREST_CUTOFF = 0.75  # difflib's ratio a suggestion needs
NEAREST_SPREAD = 3  # characters more or fewer than the glob (a fifth of a long one)
GLOB_CHARS = frozenset("*?[")
TIMEOUT_MS = 1000  # per check: past it, the answer goes without its notices
MAX_BARE_NOTICES = 3  # filter names with no value said per answer


def bare_filter_notices(parsed: SearchQuery, mode: Mode) -> list[dict[str, str]]:
    """A notice for each filter name written with nothing after its colon (``file: src/``),
    which the search took as a word, with the query that gives the filter the next word as its
    value when the search (in ``mode``) takes that query. Prose is left alone: a name whose
    next word the search would refuse as its value (``in this case: the code``, ``type: int``)
    is no notice. Each name once, at most ``MAX_BARE_NOTICES``."""
    notices: list[dict[str, str]] = []
    seen: set[str] = set()
    for bare in parsed.bare_filters:
        if bare.written.lower() in seen or len(notices) == MAX_BARE_NOTICES:
            continue
        joined = _joined(bare.suggested_query, mode) if bare.suggested_query else "alone"
        if joined == "refused":
            continue
        seen.add(bare.written.lower())
        message = (
            f"'{bare.written}' has nothing after the colon, so it was searched as a word: a filter"
            " takes its value right after the colon"
        )
        notice = {"filter": bare.written, "message": message}
        if joined == "runs" and bare.suggestion and bare.suggested_query:
            notice["message"] += f" ({bare.suggestion})"
            notice |= {"suggestion": bare.suggestion, "suggested_query": bare.suggested_query}
        notices.append(notice)
    return notices


def _joined(query: str, mode: Mode) -> str:
    """ "runs" when the search takes ``query`` in ``mode`` and it has something to search for
    (the repositories and branches it names are not looked up), "empty" when it takes it but
    nothing is left to search (``file: client`` alone), else "refused"."""
    try:
        parsed = parse_search_query(query)
        choose_mode(parsed, mode)
    except QueryRejected:
        return "refused"
    return "runs" if parsed.words or parsed.terms or parsed.symbols else "empty"


def start_notices(
    parsed: SearchQuery, request: SearchRequest
) -> Callable[[bool], list[dict[str, str]]]:
    """Start checking the query's exclusions beside the search (they do not depend on its
    answer); the call returned takes whether the first page came back empty and gives every
    notice, each with the query to write instead (``suggested_query``) where one is sure."""
    exclusions = (parsed.exclude_files, parsed.exclude_languages)
    excluded = soon(_exclusion_notices, parsed, request) if any(exclusions) else list
    globs = [*(request.path_globs or []), *parsed.files]
    languages = [*(request.languages or []), *parsed.languages]

    def finish(empty: bool) -> list[dict[str, str]]:
        found = excluded()
        if empty and (globs or languages or any(exclusions)):
            scope = candidate_scope(parsed, request)
            found += filter_notices(scope, globs, languages, empty=True)
        written = written_filters(request.query)
        for notice in found:
            # The filter as the query wrote it (path:, FILE:, a "quoted" glob), where it did.
            notice["filter"] = written.get(notice["filter"], notice["filter"])
            if notice.get("suggestion"):
                notice.update(
                    suggested_query(request.query, notice["filter"], notice["suggestion"])
                )
        return found

    return finish


def file_name_notices(
    scope: CandidateScope, words: Sequence[str], query: str, *, case_sensitive: bool
) -> list[dict[str, str]]:
    """For a ``type:file`` search that found nothing: each of its words (the first three) that
    no indexed path of ``scope``'s repositories holds in any case, whatever the filters, with
    the nearest file name where one is near (``sessoins.py``: ``sessions.py``) and the query
    with it in place."""
    return _in_time(lambda: _file_name_notices(scope, words, query, case_sensitive), [])


def _file_name_notices(
    scope: CandidateScope, words: Sequence[str], query: str, case_sensitive: bool
) -> list[dict[str, str]]:
    filtered = scope.path_regex or scope.languages or scope.exclude_path_regex
    # Judged without the file and language filters: a word they alone keep out is theirs to say.
    bare = replace(
        scope, languages=None, exclude_languages=None, path_regex=None, exclude_path_regex=None
    )
    if not scope.repo_ids or not _has_file(bare):
        return []  # nothing indexed there at all (or the repo: filters left no repository)
    # One word, in any case, with no other filter: the empty answer already says no path holds it.
    proven = len(words) == 1 and not (filtered or scope.exclude_languages or case_sensitive)
    notices: list[dict[str, str]] = []
    for word in words[:3]:
        if not proven and _first_path(bare, re.escape(word), case_insensitive=True) is not None:
            continue
        where = _where(bare)
        notice = {"filter": "type:file", "message": f"no indexed path in {where} holds {word!r}"}
        nearest = _in_time(lambda: _nearest_name(bare, word), None)  # noqa: B023
        if nearest:
            name = nearest.rsplit("/", 1)[-1] if "/" not in word else nearest
            notice["message"] += f" — did you mean {name}?"
            notice |= {"suggestion": name, **suggested_query(query, word, name)}
        notices.append(notice)
    return notices


def _exclusion_notices(parsed: SearchQuery, request: SearchRequest) -> list[dict[str, str]]:
    try:
        scope = candidate_scope(parsed, request)
    except DomainError:
        return []  # the search itself refuses the query, with this error
    exclusions = (parsed.exclude_files, parsed.exclude_languages)
    return filter_notices(scope, (), (), exclusions, empty=False)


def filter_notices(
    scope: CandidateScope,
    globs: Sequence[str],
    languages: Sequence[str],
    exclusions: tuple[Sequence[str], Sequence[str]] = ((), ()),
    *,
    empty: bool,
) -> list[dict[str, str]]:
    """``[{"filter", "message"}]``: the exclusions (``-file:`` globs, ``-lang:`` names) that
    exclude no file of ``scope``; when the answer is ``empty``, also each ``file:`` glob of
    ``globs`` and ``lang:`` of ``languages`` that matches no file on its own, else the filters
    together when they leave no file. Empty when a check runs out of time."""
    return _in_time(lambda: _notices(scope, globs, languages, exclusions, empty), [])


def _in_time(check: Callable[[], T], otherwise: T) -> T:
    """``check()``, or ``otherwise`` when one of its statements ran out of time (a notice, or
    a hint, is not worth an error or a wait)."""
    try:
        return check()
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == QUERY_CANCELED:
            return otherwise
        raise


def _notices(
    scope: CandidateScope,
    globs: Sequence[str],
    languages: Sequence[str],
    exclusions: tuple[Sequence[str], Sequence[str]],
    empty: bool,
) -> list[dict[str, str]]:
    exclude_globs, exclude_languages = exclusions
    narrowed = scope.path_regex or scope.languages or scope.exclude_path_regex
    filtered = empty and bool(globs or languages or narrowed or scope.exclude_languages)
    if not (filtered or exclude_globs or exclude_languages) or not scope.repo_ids:
        return []
    bare = replace(
        scope, languages=None, exclude_languages=None, path_regex=None, exclude_path_regex=None
    )
    if not _has_file(bare):
        return []  # nothing indexed there at all: no filter's doing
    where = _where(scope)
    notices = [
        *_glob_notices(bare, exclude_globs, "-", "excludes", where),
        *_language_notices(bare, exclude_languages, "-", "excludes", where),
    ]
    if not empty:
        return notices
    unmatched = [
        *_glob_notices(bare, globs, "", "matches", where),
        *_language_notices(bare, languages, "", "matches", where),
    ]
    if not unmatched and not _has_file(scope):
        unmatched.append(
            {
                "filter": "",
                "message": f"the file and language filters together match no indexed file in"
                f" {where}; each matches files on its own",
            }
        )
    return notices + unmatched


def _glob_notices(
    bare: CandidateScope, globs: Sequence[str], sign: str, verb: str, where: str
) -> list[dict[str, str]]:
    notices = []
    for glob in globs:
        regex = _regex(glob)
        if regex is None or _has_file(replace(bare, path_regex=regex)):
            continue
        written = f"{sign}file:{glob}"
        hint, instead = _in_time(lambda: _glob_hint(bare, glob, sign), ("", ""))  # noqa: B023
        notices.append(
            {
                "filter": written,
                "message": f"{written} {verb} no indexed file in {where}{hint}",
                **({"suggestion": instead} if instead else {}),
            }
        )
    return notices


def _language_notices(
    bare: CandidateScope, languages: Sequence[str], sign: str, verb: str, where: str
) -> list[dict[str, str]]:
    notices = []
    for language in languages:
        if _has_file(replace(bare, languages=[language.lower()])):
            continue
        written = f"{sign}lang:{language}"
        there: list[str] = _in_time(lambda: _languages(bare), [])
        present = ", ".join(f"lang:{name}" for name in there)
        notices.append(
            {
                "filter": written,
                "message": f"{written} {verb} no indexed file in {where}"
                + (f"; its languages: {present}" if present else ""),
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


def _glob_hint(bare: CandidateScope, glob: str, sign: str) -> tuple[str, str]:
    """What would match, and the filter to write instead ("" when none is sure): the glob in
    another case, else (a plain path) the nearest spelling, else the glob's last part at any
    depth."""
    regex = _regex(glob)
    found = _first_path(bare, regex, case_insensitive=True) if regex else None
    if found is not None:
        instead = "" if set(glob) & GLOB_CHARS else f"{sign}file:{found}"
        return f" — paths match case-sensitively; in another case it would match {found}", instead
    nearest = _nearest_name(bare, glob)
    if nearest:
        return f" — did you mean {sign}file:{nearest}?", f"{sign}file:{nearest}"
    pattern = glob.strip("/")
    last = pattern.rsplit("/", 1)[-1]
    if "/" in pattern and not glob.startswith("**/") and set(last) - GLOB_CHARS - {"]"}:
        tail = last + ("/" if glob.endswith("/") else "")
        regex = _regex(f"**/{tail}")
        found = _first_path(replace(bare, path_regex=regex)) if regex else None
        if found is not None:
            instead = f"{sign}file:**/{tail}"
            return f" — did you mean {instead}? (it matches {found})", instead
    return "", ""


def _nearest_name(bare: CandidateScope, glob: str) -> str | None:
    """For a glob that is a plain path (a typo: ``src/app/sesions.py``), the indexed path
    nearest in spelling; for a plain name without a directory, the nearest file name."""
    literal = glob.lstrip("/")
    if set(glob) & GLOB_CHARS or glob.endswith("/") or len(literal) < MIN_NEAREST:
        return None
    # Trigram similarity picks the candidates among names of about its length and with its
    # ending (its extension, else its last letter); difflib judges them, as it also weighs
    # letters swapped (mux_tset.go: mux_test.go).
    name = "c.path" if "/" in literal else "regexp_replace(c.path, '^.*/', '')"
    ending = "." + literal.rsplit(".", 1)[1] if "." in literal.rsplit("/", 1)[-1] else literal[-1]
    scope_sql, params = bare.sql()
    live, live_params = bare.live_join("c.id")
    sql = _NEAREST_SQL.format(name=name, live=live, scope=scope_sql, limit=NEAREST_CANDIDATES)
    apart = max(NEAREST_SPREAD, len(literal) // 5)
    spread = [len(literal) - apart, len(literal) + apart]
    with search_cursor(TIMEOUT_MS) as cursor:
        cursor.execute(sql, [*live_params, *params, *spread, len(ending), ending, literal, literal])
        rows = cursor.fetchall()
    # Judged in lower case, as the trigrams are. The file's own name must be close too: a
    # shared directory alone is no resemblance.
    wanted = literal.lower()
    base = wanted.rsplit("/", 1)[-1]
    names = {str(row[0]).lower(): str(row[0]) for row in rows}
    near = [lowered for lowered in names if _close(base, lowered.rsplit("/", 1)[-1])]
    close = difflib.get_close_matches(wanted, near, n=1, cutoff=NEAREST_CUTOFF)
    return names[close[0]] if close else None


def _close(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, a, b).ratio() >= NEAREST_CUTOFF


def _has_file(scope: CandidateScope) -> bool:
    """Whether ``scope`` holds an indexed file (the scan stops at the first)."""
    scope_sql, params = scope.sql()
    return bool(_fetch(scope, "1", scope_sql, params, "LIMIT 1"))


def _first_path(
    scope: CandidateScope, extra_regex: str | None = None, *, case_insensitive: bool = False
) -> str | None:
    """The first indexed path of ``scope`` in path order (also matching ``extra_regex``)."""
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
    scope: CandidateScope,
    select: str,
    scope_sql: str,
    params: list[Any],
    tail: str,
    tail_params: Sequence[Any] = (),
) -> list[tuple[Any, ...]]:
    live, live_params = scope.live_join("c.id")
    sql = _FILES_SQL.format(select=select, live=live, scope=scope_sql, tail=tail)
    with search_cursor(TIMEOUT_MS) as cursor:
        cursor.execute(sql, [*live_params, *params, *tail_params])
        return list(cursor.fetchall())
