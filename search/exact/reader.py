"""Reading candidate files for one search, batch by batch, in (repository name, path, id) order.

A search's reader picks how to read once, on its first batch, and keeps its own position:

* **By repository** (a literal that is not common, default branches): the repositories in
  scope are probed in name order, one in the first statement, then twice as many a statement
  (no more than the time left allows, by the last probe's time per repository): each one's live
  chunks holding a pattern's literals, from the ``(repository_id, content)`` trigram index
  (``PatternCondition``), so the index intersects the two and only that repository's candidates
  are rechecked -- a regex's page at 1 M chunks rechecked ~17,900 chunks of every repository
  before, a few hundred now. Each probe's files are a batch. When they are sparse (fewer than
  ``SPARSE_FILES_PER_REPO`` candidate files per repository so far, more than
  ``GLOBAL_AFTER_REPOS`` left) the rest are read in one **listed** probe: a repository's probe
  costs a few ms whatever it holds, and the whole table's wins for few matches over many. A
  repository with more than ``PROBE_CHUNKS`` matching chunks turns the rest **windowed**.
* **Listed** (a selective literal on chosen branches, or the rest of the repositories above): one
  statement reads the chunks holding a pattern's literals from the trigram index, keeps those of
  the files in scope, stops after ``PROBE_CHUNKS`` + 1 of them, and groups them by file. When no
  more than ``PROBE_CHUNKS`` exist, those files are every candidate left: later batches are served
  from that list, with no further statement.
* **Windowed** (a common literal: the planner expects it in more than ``COMMON_SHARE`` of the
  chunks, so its trigram bitmap alone would cost ~200 ms at 1 M chunks; or more chunks in scope
  than ``PROBE_CHUNKS``; or a pattern with no literal beside one that has some): the live files
  in scope are walked in key order from the file table (its unique ``(repository, generation,
  path)`` index, one repository after another), a window at a time, and a file of a window is a
  candidate when its own chunks hold every pattern's literals. Narrowing the whole table for a
  word in most chunks is what made the first page of ``"return"`` slow (it grew with the corpus,
  not with the page); a window costs what its files hold, and one that finds few doubles the next.
* **Every file** (no pattern has a literal): the same walk with no chunk condition.

Every mode checks every file of the key range it passes, so the files come out the same
(``tests/search/test_exact_search.py`` compares each mode with ``git grep``); the estimate only
picks the plan.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from math import ceil
from typing import Any
from uuid import UUID

from search.exact.candidates import (
    BRANCHES_SQL,
    CandidateFile,
    CandidateScope,
    PatternCondition,
    SortKey,
)
from search.exact.planner_estimates import expected_chunks, table_rows
from search.exact.reader_sql import (
    BRANCH_FILES_SQL,
    BRANCH_PROBE_SQL,
    BRANCH_WALK_SQL,
    LIVE_REPOS,
    PROBE_SQL,
    REPO_PROBE_SQL,
    WALK_SQL,
    WINDOW_SQL,
)
from search.retrieval.db import search_cursor

PROBE_CHUNKS = 10000  # more chunks in scope than this hold the literal: read files by windows
WINDOW_FILES = 100  # files walked by the first window; a window that finds few doubles the next
MAX_WINDOW_FILES = 1600
WINDOWS_PER_BATCH = 10  # at most this many windows per batch, so the budgets are checked between
# The planner's estimate of the chunks holding the literal (from its statistics sample) above
# this share of the table: a common word, whose trigram bitmap alone costs ~200 ms at 1 M
# chunks; read by windows without a probe.
COMMON_SHARE = 0.02
# Listed by repository: the first probe reads one repository, each next one twice as many (as
# many as the time left allows once a repository's probe has been timed).
REPOS_PER_PROBE = 1
MAX_REPOS_PER_PROBE = 32
# Fewer candidate files per repository probed than this, with more repositories left than
# GLOBAL_AFTER_REPOS: the rest in one probe (each repository's costs ~4 ms at 1 M chunks
# whatever it holds; the probe of the whole table, 50-90 ms, wins when matches are sparse).
SPARSE_FILES_PER_REPO = 0.5
GLOBAL_AFTER_REPOS = 8


@dataclass
class Batch:
    files: list[CandidateFile]
    last_examined: SortKey | None  # the last file looked at (candidate or not)
    exhausted: bool  # no file in scope after it
    out_of_time: bool = False  # stopped before a probe that would have ended past ``stop_at``


@dataclass
class CandidateReader:
    scope: CandidateScope
    conditions: list[PatternCondition]
    after: SortKey | None = None
    mode: str = ""  # "by repository", "listed", "windowed" or "every file", by the first batch
    listed: list[CandidateFile] = field(default_factory=list)
    repos: list[UUID] = field(default_factory=list)  # by repository: those left, in name order
    repo_names: dict[UUID, str] = field(default_factory=dict)  # their names
    repos_per_probe: int = 0
    repos_probed: int = 0
    files_found: int = 0
    repo_seconds: float = 0.0  # the last probe's time per repository
    overflowed: bool = False  # a repository held too many: windows from the last file listed
    window_files: int = 0  # the next window's size (windowed)
    clock: Callable[[], float] = time.perf_counter
    stop_at: float | None = None  # on ``clock``: no further window after this (one at least)
    want: int = 0  # the files the page still needs (0: full)

    def next_batch(
        self, limit: int, timeout_ms: int, stop_at: float | None = None, want: int = 0
    ) -> Batch:
        """Up to ``limit`` candidate files after the reader's position (fewer, possibly none,
        when the windows of one batch hold fewer or ``stop_at`` passes; ``exhausted`` says
        whether any file is left); ``want``: how many more files the page needs (0: as many as
        the time allows), which sizes the next probe by repository. Raises
        ``django.db.OperationalError`` (query canceled) when ``timeout_ms`` runs out."""
        self.stop_at, self.want = stop_at, want
        with search_cursor(timeout_ms) as cursor:
            if not self.mode:
                self.mode = self._choose(cursor)
            out_of_time = self.mode == "by repository" and not self._list_repositories(cursor)
            if self.mode in ("listed", "by repository"):
                files, self.listed = self.listed[:limit], self.listed[limit:]
                if files:
                    self.after = files[-1].key
                if self.overflowed and not self.listed:
                    self.mode = "windowed"  # from the last file served
                    return Batch(files, self.after, exhausted=False)
                exhausted = not self.listed and not self.repos
                return Batch(files, self.after, exhausted, out_of_time and not files)
            return self._windows(cursor, limit)

    def _list_repositories(self, cursor: Any) -> bool:
        """List the candidates of the next repositories, a probe of a few at a time, until
        some are listed, none is left, one holds more than ``PROBE_CHUNKS`` matching chunks
        (``overflowed``) or ``stop_at`` passes. False when it stopped because even one more
        repository's probe (timed by the last) would have ended past ``stop_at``."""
        while not self.listed and self.repos and not self.overflowed:
            if (
                self.repos_probed
                and len(self.repos) > GLOBAL_AFTER_REPOS
                and self.files_found < SPARSE_FILES_PER_REPO * self.repos_probed
            ):
                chunks, files = self._probe(cursor, PROBE_CHUNKS, self.repos)
                if chunks > PROBE_CHUNKS:
                    self.overflowed = True
                else:
                    self.repos, self.listed = [], files
                return True
            size = self._probe_size()
            if self.stop_at is not None and self.repo_seconds > 0:
                size = min(size, int((self.stop_at - self.clock()) / self.repo_seconds))
                if size < 1:
                    return False
            group = self.repos[:size]
            began = self.clock()
            most, files = self._probe(cursor, PROBE_CHUNKS, group, each=True)
            if most > PROBE_CHUNKS:
                if len(group) == 1:
                    self.overflowed = True
                self.repos_per_probe = 1  # (several: probe the same one by one)
                continue
            self.repo_seconds = (self.clock() - began) / len(group)
            del self.repos[: len(group)]
            if not files and self.repos:
                # Nothing in those repositories: the position moves to the start of the next one
                # (no file has an empty path), so a search that stops here goes on from there
                # instead of probing them again.
                self.after = (self.repo_names[self.repos[0]], "", 0)
            self.repos_probed += len(group)
            self.files_found += len(files)
            self.listed = files
            self.repos_per_probe = min(len(group) * 2, MAX_REPOS_PER_PROBE)
            if self.stop_at is not None and self.clock() >= self.stop_at:
                return True
        return True

    def _probe_size(self) -> int:
        """Twice the last probe's repositories, or, while the page lacks ``want`` files, as
        many as should hold them at the candidate files per repository found so far."""
        if self.want and self.files_found:
            size = ceil(self.want * self.repos_probed / self.files_found)
            return max(1, min(size, MAX_REPOS_PER_PROBE))
        return self.repos_per_probe or REPOS_PER_PROBE

    def _any_pattern(self) -> tuple[str, list[Any]]:
        """A chunk holding some pattern's literals, as one parenthesised condition: the
        statements put it beside others with AND, where a bare OR would let another
        repository's chunks through."""
        sql = "(" + " OR ".join(cond.sql() for cond in self.conditions) + ")"
        return sql, [p for cond in self.conditions for p in cond.params]

    def _choose(self, cursor: Any) -> str:
        if not any(cond.literals for cond in self.conditions):
            return "every file"
        if not all(cond.literals for cond in self.conditions):
            return "windowed"
        any_pattern, any_params = self._any_pattern()
        if expected_chunks(cursor, any_pattern, any_params) > COMMON_SHARE * table_rows(cursor):
            return "windowed"  # a probe would pay for the word's whole trigram bitmap
        if self.scope.branches is None:
            name = self.after[0] if self.after is not None else ""
            cursor.execute(
                f"SELECT r.id, r.name FROM indexing_repository r WHERE {LIVE_REPOS}"  # noqa: S608
                " AND r.name >= %s ORDER BY r.name",
                [self.scope.repo_ids, name],
            )
            self.repo_names = dict(cursor.fetchall())
            self.repos = list(self.repo_names)
            return "by repository"
        chunks, files = self._probe(cursor, PROBE_CHUNKS)
        if chunks > PROBE_CHUNKS:
            return "windowed"
        self.listed = files
        return "listed"

    def _probe(
        self,
        cursor: Any,
        max_chunks: int,
        repo_ids: list[UUID] | None = None,
        *,
        each: bool = False,
    ) -> tuple[int, list[CandidateFile]]:
        """How many chunks in scope after the position hold a pattern's literals (at most
        ``max_chunks`` + 1), and their files in key order; among ``repo_ids`` (default: the
        scope's), with ``each`` one repository at a time (the count is then the most one had:
        ``REPO_PROBE_SQL``)."""
        scope = self.scope if repo_ids is None else replace(self.scope, repo_ids=repo_ids)
        scope_sql, scope_params = scope.sql(repositories=not each)
        any_pattern, any_params = self._any_pattern()
        several = len(self.conditions) > 1
        flags = "".join(f", {cond.sql()} AS m{i}" for i, cond in enumerate(self.conditions))
        having = ""
        if several:
            having = "HAVING " + " AND ".join(
                f"bool_or(c.m{i})" for i in range(len(self.conditions))
            )
        if each:
            sql = REPO_PROBE_SQL.format(
                flags=flags if several else "",
                any_pattern=any_pattern,
                scope=scope_sql,
                having=having,
            )
            name, path, file_id = self.after if self.after is not None else ("", "", 0)
            params = [
                scope.repo_ids,
                *(any_params if several else []),
                *any_params,
                *scope_params,
                name,
                path,
                file_id,
                max_chunks + 1,
            ]
        else:
            sql, params = self._probe_sql(scope, scope_sql, scope_params, flags, having)
            params.append(max_chunks + 1)
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        chunks = rows[0][0] if rows else 0
        return chunks, [CandidateFile(*row[1:]) for row in rows if row[1] is not None]

    def _probe_sql(
        self,
        scope: CandidateScope,
        scope_sql: str,
        scope_params: list[Any],
        flags: str,
        having: str,
    ) -> tuple[str, list[Any]]:
        """The probe of every repository in ``scope`` at once, or of its branches."""
        any_pattern, any_params = self._any_pattern()
        several = len(self.conditions) > 1
        after_sql, after_params = "", []
        branched = self.scope.branches is not None
        if self.after is not None:
            after_sql = "AND ({}, c.path, c.file_id) > (%s, %s, %s)".format(
                "e.sort_name" if branched else "r.name"
            )
            after_params = list(self.after)
        # The files in scope: each branch's entries, or the repositories' live generations.
        template, source, source_params = (
            (BRANCH_PROBE_SQL, {"branches": BRANCHES_SQL}, self.scope.branch_arrays())
            if branched
            else (PROBE_SQL, {"live": LIVE_REPOS}, [scope.repo_ids])
        )
        sql = template.format(  # only placeholders and fixed SQL are formatted in
            flags=flags if several else "",
            any_pattern=any_pattern,
            scope=scope_sql,
            after=after_sql,
            having=having,
            **source,
        )
        params = [
            *(any_params if several else []),
            *any_params,
            *source_params,
            *scope_params,
            *after_params,
        ]
        return sql, params

    def _windows(self, cursor: Any, limit: int) -> Batch:
        found: list[CandidateFile] = []
        for _ in range(WINDOWS_PER_BATCH):
            size = self.window_files or WINDOW_FILES
            window = self._window(cursor, size)
            matched = [candidate for candidate, hit in window if hit]
            found += matched
            if len(matched) * 2 < limit:
                self.window_files = min(size * 2, MAX_WINDOW_FILES)
            if window:
                self.after = window[-1][0].key
            if len(window) < size:
                return Batch(found, self.after, exhausted=True)
            if len(found) >= limit or (self.stop_at is not None and self.clock() >= self.stop_at):
                break
        return Batch(found, self.after, exhausted=False)

    def _window(self, cursor: Any, size: int) -> list[tuple[CandidateFile, bool]]:
        """The next ``size`` live files in scope, each with whether it is a candidate."""
        scope_sql, scope_params = self.scope.sql()
        if self.scope.branches is not None:
            walk, walk_params = self._branch_walk(scope_sql, scope_params, size)
        else:
            walk = WALK_SQL.format(scope=scope_sql, live=LIVE_REPOS)
            walk_params = self._walk_params(scope_params, size)
        checks, flags = [], []
        params = [*walk_params]
        if self.mode == "windowed":
            for i, cond in enumerate(c for c in self.conditions if c.literals):
                checks.append(
                    "LEFT JOIN LATERAL (SELECT 1 AS hit FROM indexing_chunk c"  # noqa: S608
                    f" WHERE c.file_id = w.file_id AND {cond.sql()} LIMIT 1) m{i} ON TRUE"
                )
                flags.append(f"m{i}.hit IS NOT NULL")
                params += cond.params
        sql = WINDOW_SQL.format(
            walk=walk, matched=" AND ".join(flags) or "TRUE", checks=" ".join(checks)
        )
        cursor.execute(sql, params)
        return [(CandidateFile(*row[:-1]), bool(row[-1])) for row in cursor.fetchall()]

    def _walk_params(self, scope_params: list[Any], size: int) -> list[Any]:
        name, path, file_id = self.after if self.after is not None else ("", "", 0)
        return [
            *scope_params,
            name,
            path,
            name,
            path,
            file_id,
            size,
            self.scope.repo_ids,
            name,
            size,
        ]

    def _branch_walk(
        self, scope_sql: str, scope_params: list[Any], size: int
    ) -> tuple[str, list[Any]]:
        """The walk over the chosen branches and its parameters."""
        name, path, file_id = self.after if self.after is not None else ("", "", 0)
        own = BRANCH_FILES_SQL.format(
            source="indexing_sourcefile c",
            owner="c.repository_id",
            generation="c.generation",
            scope=scope_sql,
        )
        shared = BRANCH_FILES_SQL.format(
            source="indexing_sharedfile s JOIN indexing_sourcefile c ON c.id = s.file_id",
            owner="s.repository_id",
            generation="s.generation",
            scope=scope_sql,
        )
        part = [*scope_params, name, path, name, path, file_id, size]
        walk = BRANCH_WALK_SQL.format(branches=BRANCHES_SQL, own=own, shared=shared)
        return walk, [*self.scope.branch_arrays(), *part, *part, size, name, size]
