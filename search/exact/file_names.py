"""File-name search (``type:file``): indexed paths that hold every word, or match every glob.

A word is a piece of the path (``client``, ``test_``; case-insensitive unless ``case:yes``), a
word with ``*``, ``?`` or ``[`` is a path glob (``*.py``, ``src/**/test_*``: the syntax of
``file:``), a ``"quoted literal"`` a piece of the path with any characters. With no words, every
file in scope. The filters of the query language (``repo:``, ``lang:``, ``file:``, ``-file:``)
narrow it as they narrow exact search.

Ranked by how well the file's own name matches -- the name is a word (``client.py``), the name
without its extension is (``client``), the name holds every word, then the words only in its
directories -- then shorter paths first, then (repository, path). Pages are keyset-paged on that
order (``next_cursor``), and ``total`` counts every match.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from typing import Any

from search.exact.candidates import CandidateFile, CandidateScope, escape_like
from search.exact.cursor import invalid_cursor, pack_cursor, unpack_cursor
from search.exact.errors import QueryRejected
from search.retrieval.db import search_cursor
from search.retrieval.query import InvalidGlob, glob_to_regex

GLOB_CHARS = frozenset("*?[")
TIMEOUT_MS = 4000

# (tier, path length, repository name -- with a branch filter, name and branch --, path, file id)
FileKey = tuple[int, int, str, str, int]


@dataclass
class FileNameRequest:
    scope: CandidateScope
    words: list[str]  # pieces of the path
    globs: list[str]
    case_sensitive: bool
    fingerprint: str
    limit: int = 10
    cursor: str | None = None


@dataclass
class FileNameHit:
    file: CandidateFile
    tier: int  # 0 the name is a word, 1 the name without extension is, 2 the name holds them, 3
    ranges: list[tuple[int, int]] = field(default_factory=list)  # the words in the path


@dataclass
class FileNameResult:
    hits: list[FileNameHit]
    total: int
    truncated: bool
    next_cursor: str | None
    ms: float
    files_before: int = 0
    keys: list[FileKey] = field(default_factory=list)  # each hit's position, for cursors
    fingerprint: str = ""
    request_cursor: str | None = None  # the cursor this page was asked with

    def cursor_after(self, kept: int) -> str | None:
        """The cursor of the files after this page's first ``kept`` (0: this page again)."""
        if kept <= 0:
            return self.request_cursor
        return encode_cursor(self.keys[kept - 1], self.files_before + kept, self.fingerprint)


TIERS = ("name", "name_without_extension", "words_in_name", "words_in_path")


_CLASS = re.compile(r"\[[!^]?([\w.\-]+)\]")


def refuse_bad_ranges(glob: str, what: str = "file:") -> None:
    """A glob class with a backwards range (``[z-a]``) is a 400 here, not an error from
    PostgreSQL's regex compiler later."""
    for members in _CLASS.findall(glob):
        for start, end in re.findall(r"(.)-(.)", members):
            if start > end:
                raise QueryRejected(
                    "invalid_filter",
                    f"{what} {glob!r}: the range {start}-{end} runs backwards",
                    {"filter": what},
                )


def split_terms(words: list[str]) -> tuple[list[str], list[str]]:
    """(pieces, globs) of the free words."""
    globs = [w for w in words if GLOB_CHARS & set(w)]
    return [w for w in words if w not in globs], globs


def encode_cursor(key: FileKey, files_before: int, fingerprint: str) -> str:
    body = {"f": list(key), "n": files_before, "q": fingerprint}
    return pack_cursor(body)


def decode_cursor(cursor: str | None, fingerprint: str) -> tuple[FileKey | None, int]:
    if not cursor:
        return None, 0
    bad = invalid_cursor()
    body = unpack_cursor(cursor)
    try:
        tier, length, name, path, file_id = body["f"]
        before = body["n"]
        ints = (tier, length, file_id, before)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
            raise ValueError("bad key")
        if not (isinstance(name, str) and isinstance(path, str)) or "\x00" in name + path:
            raise ValueError("bad key")
        if not (0 <= tier <= 3 and 0 <= file_id < 2**63 and before >= 0 and length >= 0):
            raise ValueError("bad key")
    except (ValueError, KeyError, TypeError):
        raise bad from None
    if body.get("q") != fingerprint:
        raise bad
    return (tier, length, name, path, file_id), before


def _conditions(request: FileNameRequest) -> tuple[str, list[Any]]:
    clauses, params = [], []
    op = "LIKE" if request.case_sensitive else "ILIKE"
    for word in request.words:
        clauses.append(f"c.path {op} %s")
        params.append("%" + escape_like(word) + "%")
    for glob in request.globs:
        refuse_bad_ranges(glob, "type:file")
        try:
            clauses.append("c.path ~ %s")
            params.append(glob_to_regex(glob))
        except InvalidGlob as exc:
            raise QueryRejected("invalid_filter", f"type:file {glob!r}: {exc}") from None
    return " AND ".join(clauses) or "TRUE", params


_RANKED_SQL = """
    SELECT * FROM (
        SELECT c.id, r.id AS repo_id, r.name, r.url, {commit}, c.path, c.language,
               c.is_test, c.is_doc,
               CASE WHEN lower(regexp_replace(c.path, '^.*/', '')) = ANY(%s) THEN 0
                    WHEN lower(regexp_replace(regexp_replace(c.path, '^.*/', ''),
                                              '[.][^.]*$', '')) = ANY(%s) THEN 1
                    WHEN {in_name} THEN 2
                    ELSE 3 END AS tier,
               length(c.path) AS path_length, {branch} AS branch, {order} AS sort_name
        FROM indexing_sourcefile c {live}
        WHERE {scope} AND {conditions}
    ) f
    WHERE {after}
    ORDER BY tier, path_length, sort_name, path, id
    LIMIT %s
"""
_COUNT_SQL = """
    SELECT count(*) FROM indexing_sourcefile c {live} WHERE {scope} AND {conditions}
"""


def _ranges(path: str, words: list[str], case_sensitive: bool) -> list[tuple[int, int]]:
    haystack = path if case_sensitive else path.lower()
    found = []
    for word in words:
        needle = word if case_sensitive else word.lower()
        at = haystack.find(needle)
        while needle and at >= 0:
            found.append((at, at + len(needle)))
            at = haystack.find(needle, at + len(needle))
    return sorted(set(found))


def run_file_names(request: FileNameRequest) -> FileNameResult:
    started = time.perf_counter()
    after, before = decode_cursor(request.cursor, request.fingerprint)
    scope_sql, scope_params = request.scope.sql()
    conditions, condition_params = _conditions(request)
    lowered = [w.lower() for w in request.words]
    in_name = " AND ".join(
        ["strpos(lower(regexp_replace(c.path, '^.*/', '')), %s) > 0"] * len(lowered)
    )
    after_sql = "TRUE"
    after_params: list[Any] = []
    if after is not None:
        after_sql = "(tier, path_length, sort_name, path, id) > (%s, %s, %s, %s, %s)"
        after_params = list(after)
    # With a branch filter, each chosen branch's files (a file once for each branch holding it).
    live, live_params = request.scope.live_join("c.id")
    sql = _RANKED_SQL.format(
        in_name=in_name or "FALSE",
        live=live,
        scope=scope_sql,
        conditions=conditions,
        after=after_sql,
        commit=request.scope.commit_column,
        branch=request.scope.branch_column,
        order=request.scope.order_column,
    )
    count_sql = _COUNT_SQL.format(live=live, scope=scope_sql, conditions=conditions)
    # A word-less query ranks every name alike; a word never equals a name when there is none.
    names = lowered or [""]
    params: list[Any] = [names, names, *lowered, *live_params, *scope_params, *condition_params]
    with search_cursor(TIMEOUT_MS) as cursor:
        cursor.execute(sql, [*params, *after_params, request.limit + 1])
        rows = cursor.fetchall()
        cursor.execute(count_sql, [*live_params, *scope_params, *condition_params])
        (total,) = cursor.fetchone()
    page = rows[: request.limit]
    hits = [
        FileNameHit(
            replace(CandidateFile(*row[:9]), branch=row[11]),
            row[9],
            _ranges(row[5], request.words, request.case_sensitive),
        )
        for row in page
    ]
    keys: list[FileKey] = [(row[9], row[10], row[12], row[5], row[0]) for row in page]
    more = len(rows) > request.limit
    return FileNameResult(
        hits=hits,
        total=int(total),
        truncated=more,
        next_cursor=encode_cursor(keys[-1], before + len(page), request.fingerprint)
        if more
        else None,
        ms=round((time.perf_counter() - started) * 1000, 1),
        files_before=before,
        keys=keys,
        fingerprint=request.fingerprint,
        request_cursor=request.cursor,
    )
