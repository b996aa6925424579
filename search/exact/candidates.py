"""What exact search reads: its scope and conditions as SQL, candidate files, their lines.

A chunk's ``content`` is a verbatim slice of its file's lines and every line of an indexed file is
in at least one chunk, so a line that contains a literal lies in a chunk that contains it: the
chunks are a complete, exact store of the text (overlaps only repeat lines). ``gin_trgm_ops`` on
``indexing_chunk.content`` (with ``repository_id``: migration ``indexing.0015``, see
``PatternCondition``) answers ``LIKE '%lit%'`` from the index for literals of three characters
or more; shorter literals and regexes without a required
literal scan the chunks in scope, bounded by the statement timeout.

``search.exact.reader`` reads candidate files in (repository name, path, file id) order after a
keyset position, so pages are stable while the generation stays; the engine verifies them line
by line from ``file_lines``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from accounts.visibility import Viewer
from indexing.models import IndexedBranch, Repository
from search.exact.pattern_logic import AllOf, Expr, Not, TermRef
from search.exact.patterns import MIN_NARROWING_CHARS
from search.retrieval.db import search_cursor
from search.retrieval.scope import LIVE_CHUNKS_SQL, scope_repositories

SortKey = tuple[str, str, int]


@dataclass(frozen=True)
class CandidateFile:
    file_id: int
    repo_id: UUID
    repo_name: str
    repo_url: str
    commit: str
    path: str
    language: str
    is_test: bool
    is_doc: bool
    branch: str = ""  # set when the search named branches (``CandidateScope.branches``)
    sort_name: str = ""  # the repository's place in the order then: one per branch

    @property
    def key(self) -> SortKey:
        return (self.sort_name or self.repo_name, self.path, self.file_id)


@dataclass(frozen=True)
class BranchEntry:
    """One repository's branch a search with a branch filter covers: the files its generation
    owns plus those it references (``indexing.models.SharedFile``), at its own commit."""

    repo_id: UUID
    generation: int
    branch: str
    commit: str
    sort_name: str  # orders (repository name, branch name): the key's first part

    @staticmethod
    def label(repo_name: str, branch: str) -> str:
        return f"{repo_name}\x01{branch}"


@dataclass
class CandidateScope:
    """SQL filters on chunks (alias ``c``) and repositories (alias ``r``)."""

    repo_ids: list[UUID]
    languages: list[str] | None = None
    exclude_languages: list[str] | None = None
    path_regex: str | None = None
    exclude_path_regex: str | None = None
    # None: each repository's default branch (its live rows, the plans as they always were);
    # else the branches searched, each with the files of its generation.
    branches: list[BranchEntry] | None = None

    def branch_arrays(self) -> list[list[Any]]:
        """The entries as the parallel arrays ``unnest`` reads (``BRANCHES_SQL``)."""
        entries = self.branches or []
        return [
            [e.repo_id for e in entries],
            [e.generation for e in entries],
            [e.branch for e in entries],
            [e.commit for e in entries],
            [e.sort_name for e in entries],
        ]

    def live_join(self, file_column: str = "c.file_id") -> tuple[str, list[Any]]:
        """The join keeping rows ``c`` (chunks, or files with ``c.id``) to the live files in
        scope, with its parameters: ``LIVE_CHUNKS_SQL`` for the default branches, else the
        chosen branches ``e`` (a row once for each branch holding it)."""
        if self.branches is None:
            return LIVE_CHUNKS_SQL, []
        return BRANCH_LIVE_SQL.format(file=file_column), self.branch_arrays()

    @property
    def commit_column(self) -> str:
        """The SQL of a row's commit beside ``live_join``."""
        return "r.last_indexed_commit" if self.branches is None else "e.at_commit"

    @property
    def branch_column(self) -> str:
        return "''" if self.branches is None else "e.branch"

    @property
    def order_column(self) -> str:
        """The repository's (and with branches, the branch's) place in the order."""
        return "r.name" if self.branches is None else "e.sort_name"

    def sql(self, *, repositories: bool = True) -> tuple[str, list[Any]]:
        """The filters (``repositories=False``: without the repositories', when the statement
        keeps to them itself)."""
        clauses = ["c.repository_id = ANY(%s)"] if repositories else ["TRUE"]
        params: list[Any] = [self.repo_ids] if repositories else []
        if self.languages:
            clauses.append("lower(c.language) = ANY(%s)")
            params.append(self.languages)
        if self.exclude_languages:
            clauses.append("NOT lower(c.language) = ANY(%s)")
            params.append(self.exclude_languages)
        if self.path_regex:
            clauses.append("c.path ~ %s")
            params.append(self.path_regex)
        if self.exclude_path_regex:
            clauses.append("c.path !~ %s")
            params.append(self.exclude_path_regex)
        return " AND ".join(clauses), params


# The branches in scope as rows ``e`` (parameters: ``CandidateScope.branch_arrays``).
BRANCHES_SQL = (
    "unnest(%s::uuid[], %s::int[], %s::text[], %s::text[], %s::text[])"
    " AS e(repo_id, generation, branch, at_commit, sort_name)"
)
# Rows ``c`` of the chosen branches: of a branch's generation, or a file it shares.
BRANCH_LIVE_SQL = (
    "JOIN " + BRANCHES_SQL + " ON e.repo_id = c.repository_id AND (c.generation = e.generation"  # noqa: S608
    " OR EXISTS (SELECT 1 FROM indexing_sharedfile s WHERE s.file_id = {file}"
    " AND s.repository_id = e.repo_id AND s.generation = e.generation))"
    " JOIN indexing_repository r ON r.id = c.repository_id AND r.status = 'ready'"
)


@dataclass
class PatternCondition:
    """The literals one pattern's matches must contain (an empty list: any chunk may match).

    The chunks are read through ``chunk_repo_content_trgm`` (migration ``indexing.0015``: GIN
    on ``(repository_id, content COLLATE "C" gin_trgm_ops)``), so the conditions compare in the
    ``C`` collation: ``LIKE`` is byte for byte in any collation, and ``ILIKE`` folds ASCII letters
    only -- three to four times cheaper per chunk than the default collation's ``lower()``, the
    cost of rechecking the chunks the index returns. A case-insensitive literal is therefore
    narrowed by its ASCII runs (of ``MIN_NARROWING_CHARS`` or more: ``café`` by ``caf``); one
    with none narrows nothing. (``git grep -i`` folds ASCII alone too; the Kelvin sign and the
    long s, which RE2 and ``re`` fold to ``k`` and ``s``, do not make a chunk a candidate.)
    """

    literals: list[str]
    case_sensitive: bool = False
    params: list[str] = field(init=False)
    # A chunk meeting any of these instead (``any_of``: an OR of terms); ``literals`` is then
    # theirs together, or empty when one of them narrows nothing.
    alternatives: list[PatternCondition] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.alternatives:
            narrows = all(alt.literals for alt in self.alternatives)
            alts = self.alternatives if narrows else []
            self.literals = [lit for alt in alts for lit in alt.literals]
            self.params = [p for alt in alts for p in alt.params]
            return
        if not self.case_sensitive:
            self.literals = [run for lit in self.literals for run in _ascii_runs(lit)]
        self.params = ["%" + escape_like(lit) + "%" for lit in self.literals]

    @classmethod
    def any_of(cls, alternatives: list[PatternCondition]) -> PatternCondition:
        return cls([], alternatives=alternatives)

    def sql(self) -> str:
        if not self.literals:
            return "TRUE"
        if self.alternatives:
            return "(" + " OR ".join(alt.sql() for alt in self.alternatives) + ")"
        op = "LIKE" if self.case_sensitive else "ILIKE"
        return "(" + " AND ".join(f'c.content COLLATE "C" {op} %s' for _ in self.literals) + ")"


def narrowing(expr: Expr, conditions: Sequence[PatternCondition]) -> list[PatternCondition]:
    """Conditions every file matching ``expr`` meets (each: some chunk of it does), from each
    term's own (``conditions[i]`` for term ``i``). A NOT requires nothing; an OR, a chunk
    meeting one of its branches' conditions (a branch's first: it holds wherever the branch
    does)."""
    if isinstance(expr, TermRef):
        return [conditions[expr.index]]
    if isinstance(expr, Not):
        return []
    if isinstance(expr, AllOf):
        return [cond for child in expr.children for cond in narrowing(child, conditions)]
    branches = [narrowing(child, conditions) for child in expr.children]
    if any(not branch for branch in branches):
        return []  # a branch that requires nothing: the OR narrows nothing
    return [PatternCondition.any_of([branch[0] for branch in branches])]


def _ascii_runs(literal: str) -> list[str]:
    """``literal`` itself when it is ASCII, else its ASCII runs long enough to narrow."""
    if literal.isascii():
        return [literal]
    return [run for run in _NON_ASCII.split(literal) if len(run) >= MIN_NARROWING_CHARS]


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def branch_entries(
    patterns: list[str], repo_ids: list[UUID], viewer: Viewer, *, default_plan: bool = True
) -> tuple[list[UUID], list[BranchEntry] | None]:
    """The repositories and branches a branch filter (names, globs, ``*``) chooses among
    ``repo_ids``: (their ids, None) when every one is on its default branch -- the default
    plans, unchanged (unless not ``default_plan``) -- else (ids, every chosen branch). Raises
    ``UnknownBranch`` when no repository in scope has such a branch indexed."""
    if repo_ids == [UUID(int=0)]:  # the other filters left nothing
        return repo_ids, None
    chosen = scope_repositories(repo_ids, viewer, patterns)
    ids = list(dict.fromkeys(r.id for r in chosen)) or [UUID(int=0)]
    if default_plan and all(r.default for r in chosen):
        return ids, None
    entries = [
        BranchEntry(r.id, r.generation, r.branch, r.commit, BranchEntry.label(r.name, r.branch))
        for r in chosen
    ]
    return ids, entries


def escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def file_lines(file_ids: list[int], timeout_ms: int) -> dict[int, dict[int, str]]:
    """Every stored line (1-based number -> text) of each file, rebuilt from its chunks."""
    lines: dict[int, dict[int, str]] = {fid: {} for fid in file_ids}
    if not file_ids:
        return lines
    with search_cursor(timeout_ms) as cursor:
        cursor.execute(
            "SELECT file_id, start_line, end_line, content FROM indexing_chunk"
            " WHERE file_id = ANY(%s)",
            [file_ids],
        )
        for file_id, start_line, end_line, content in cursor.fetchall():
            target = lines[file_id]
            pieces = content.split("\n")[: end_line - start_line + 1]  # no line past end_line
            for offset, text in enumerate(pieces):
                target.setdefault(start_line + offset, text)
    return lines


def scope_file_count(scope: CandidateScope) -> int:
    """The files of the repositories (or branches) ``scope`` covers, before its language and
    path filters: an upper bound of its candidate files, read from the counts indexing keeps."""
    if scope.branches is not None:
        pairs = {(e.repo_id, e.branch) for e in scope.branches}
        rows = IndexedBranch.objects.filter(
            repository_id__in={r for r, _ in pairs}, name__in={b for _, b in pairs}
        ).values_list("repository_id", "name", "file_count", "shared_file_count")
        return sum(own + shared for repo, name, own, shared in rows if (repo, name) in pairs)
    counts = Repository.objects.filter(pk__in=scope.repo_ids).values_list("file_count", flat=True)
    return sum(counts)
