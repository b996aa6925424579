"""Find references: where an identifier is used, from the stored call names and the exact text.

Two sources, merged per line: the chunks whose ``calls`` (what tree-sitter recorded as called:
``foo()`` and ``obj.foo()`` both store ``foo``) hold the name -- ``via: "call"`` -- and the
identifier's whole-word, case-sensitive matches found by the exact engine (trigram-narrowed,
verified line by line) -- ``via: "text"`` (imports, references without a call, languages without
a call query). The definition lines of the name itself are left out. Lines come in (repository,
path, line) order; at most ``limit`` of them, ``truncated`` when more exist or the exact search
stopped at its file page or time budget.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from accounts.visibility import Viewer
from indexing.permalinks import blob_url
from indexing.repository_refs import link_refs
from search.exact.candidates import CandidateScope, PatternCondition
from search.exact.engine import ExactRequest, run_exact
from search.exact.errors import QueryRejected
from search.retrieval.db import search_cursor
from search.retrieval.scope import LIVE_CHUNKS_SQL
from search.symbols.service import checked_name, readable_repository_ids

MAX_LIMIT = 500
EXACT_FILES = 100
MAX_CALL_CHUNKS = 1000
MAX_LINE_CHARS = 300
_IDENTIFIER = re.compile(r"[^\W\d][\w$]*|\$[\w$]*")


@dataclass
class IdentifierMatcher:
    """Whole-word, case-sensitive occurrences (``foo`` in ``foo(``, not in ``foobar``)."""

    name: str

    def __post_init__(self) -> None:
        self._regex = re.compile(r"(?<![\w$])" + re.escape(self.name) + r"(?![\w$])")

    def ranges(self, line: str) -> list[tuple[int, int]]:
        return [m.span() for m in self._regex.finditer(line)]


@dataclass(frozen=True)
class Reference:
    repo_id: UUID
    repo_name: str
    commit: str
    path: str
    language: str
    line: int
    text: str
    ranges: list[tuple[int, int]]
    via: str
    link_ref: str = ""


@dataclass
class ReferenceAnswer:
    name: str
    references: list[Reference]
    truncated: bool


_CALL_CHUNKS_SQL = """
    SELECT r.id, r.name, r.last_indexed_commit, c.path, c.language, c.start_line, c.end_line, c.content,
           (c.symbol_name = %s) AS defines
    FROM indexing_chunk c {live}
    WHERE {scope} AND (c.calls @> %s::jsonb OR c.symbol_name = %s)
    ORDER BY r.name, c.path, c.start_line
    LIMIT %s
"""


def _call_lines(
    name: str, scope: CandidateScope, matcher: IdentifierMatcher
) -> tuple[dict[tuple[UUID, str, int], Reference], set[tuple[UUID, str, int]], bool]:
    """Lines of the chunks that call ``name``, and the definition lines of ``name``."""
    scope_sql, params = scope.sql()
    sql = _CALL_CHUNKS_SQL.format(live=LIVE_CHUNKS_SQL, scope=scope_sql)
    with search_cursor(4000) as cursor:
        cursor.execute(sql, [name, *params, json.dumps([name]), name, MAX_CALL_CHUNKS + 1])
        rows = cursor.fetchall()
    call_syntax = re.compile(r"(?<![\w$])" + re.escape(name) + r"\s*[(!]")
    calls: dict[tuple[UUID, str, int], Reference] = {}
    definitions: set[tuple[UUID, str, int]] = set()
    for repo_id, repo_name, commit, path, language, start, end, content, defines in rows[
        :MAX_CALL_CHUNKS
    ]:
        first_seen = True
        for offset, text in enumerate(content.split("\n")[: end - start + 1]):
            ranges = matcher.ranges(text)
            if not ranges:
                continue
            key = (repo_id, path, start + offset)
            if defines and first_seen:  # the definition's own line: where the name is defined
                definitions.add(key)
                first_seen = False
                continue
            if not defines:
                # In a chunk that calls it: a call where the line calls it, else a mention.
                via = "call" if call_syntax.search(text) else "text"
                calls[key] = Reference(
                    repo_id, repo_name, commit, path, language, start + offset, text, ranges, via
                )
    return calls, definitions, len(rows) > MAX_CALL_CHUNKS


def find_references(
    name: object, viewer: Viewer, *, repo: str | None = None, limit: int = 100
) -> ReferenceAnswer:
    """References to the identifier ``name`` in ``repo`` (an id or name) or in every
    repository ``viewer`` may see."""
    identifier = checked_name(name, "name")
    if not _IDENTIFIER.fullmatch(identifier):
        raise QueryRejected(
            "invalid",
            "name must be an identifier (letters, digits, _ or $, not starting with a digit)",
            {"field": "name"},
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise QueryRejected("invalid", f"limit must be 1..{MAX_LIMIT}", {"field": "limit"})
    repo_ids = readable_repository_ids(viewer, repo)
    if not repo_ids:
        return ReferenceAnswer(identifier, [], False)
    scope = CandidateScope(repo_ids=repo_ids)
    matcher = IdentifierMatcher(identifier)
    found, definitions, calls_cut = _call_lines(identifier, scope, matcher)
    exact = run_exact(
        ExactRequest(
            matchers=[matcher],
            conditions=[PatternCondition([identifier], case_sensitive=True)],
            scope=scope,
            fingerprint="references",
            limit=EXACT_FILES,
            context_lines=0,
            max_matches_per_file=50,
            budget_ms=2000,
            count_budget_ms=200,  # past the page: is there one more file?
            count_max_files=1,
        )
    )
    for hit in exact.hits:
        for match in hit.matches:
            key = (hit.file.repo_id, hit.file.path, match.line)
            if key in found or key in definitions:
                continue
            found[key] = Reference(
                hit.file.repo_id,
                hit.file.repo_name,
                hit.file.commit,
                hit.file.path,
                hit.file.language,
                match.line,
                match.text,
                list(match.ranges),
                "text",
            )
    ordered = sorted(found.values(), key=lambda r: (r.repo_name, r.path, r.line))
    refs = link_refs({(r.repo_id, r.repo_name) for r in ordered[:limit]}, viewer)
    kept = [_with_ref(r, refs[r.repo_id]) for r in ordered[:limit]]
    more = len(ordered) > limit or calls_cut or exact.truncated or exact.timed_out
    return ReferenceAnswer(identifier, kept, more)


def _with_ref(reference: Reference, link_ref: str) -> Reference:
    from dataclasses import replace

    return replace(reference, link_ref=link_ref)


def reference_doc(reference: Reference) -> dict[str, Any]:
    return {
        "repository": reference.repo_name,
        "repo_id": str(reference.repo_id),
        "path": reference.path,
        "language": reference.language,
        "line": reference.line,
        "start_line": reference.line,
        "end_line": reference.line,
        "snippet": reference.text[:MAX_LINE_CHARS],
        "ranges": [list(r) for r in reference.ranges],
        "via": reference.via,
        "url": blob_url(
            reference.link_ref or str(reference.repo_id),
            reference.commit,
            reference.path,
            reference.line,
        ),
    }
