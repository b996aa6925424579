"""A hybrid answer's count of exact matches for a one-identifier query: how many files hold the
identifier literally, with a short budget, kept per process for the generations it was made on;
read from a replica as an exact search is (``search.retrieval.replicas``).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import connection

from accounts.visibility import Viewer
from indexing.models import Repository
from search.exact.candidates import CandidateScope, PatternCondition, branch_entries
from search.exact.engine import ExactRequest, run_exact
from search.exact.pattern_logic import Term
from search.exact.patterns import compile_term
from search.exact.repositories import ready_repositories
from search.lru import Lru
from search.retrieval.replicas import positions, read_with_fallback

# counted beside the search, within this budget (it must not slow the answer much)
COUNT_BUDGET_MS = 150
# (text, repositories with their live generation and time indexed) -> (count, lower bound)
COUNTS: Lru[Any, tuple[int, bool]] = Lru(4096)


def count_exact_matches(
    text: str, repo_ids: list[UUID] | None, viewer: Viewer, branches: list[str] | None = None
) -> tuple[int, bool]:
    """How many files ``viewer`` may see hold ``text`` exactly (case-insensitive), with a short
    budget, on ``branches`` (None: the default ones). ``repo_ids`` and ``branches`` were
    checked already (the hybrid search ran on them).

    On the default branches the count is kept (``COUNTS``) for the generations it was made on:
    an identifier searched again costs one lookup until one of its repositories is indexed anew
    (the count reads up to ``count_max_files`` files, ~100 ms of CPU at 1 M chunks)."""
    key = None
    if not branches:
        # the repositories in scope with what the count is kept for, in one statement
        rows = (
            ready_repositories(viewer, "active_generation", "last_indexed_at")
            if repo_ids is None
            else Repository.objects.filter(pk__in=repo_ids).values_list(
                "pk", "active_generation", "last_indexed_at"
            )
        )
        generations = [(pk, g, at) for pk, g, at in rows]
        repo_ids = repo_ids if repo_ids is not None else [pk for pk, _g, _at in generations]
        key = (text, tuple(sorted((str(pk), g, str(at)) for pk, g, at in generations)))
        kept = COUNTS.get(key)
        if kept is not None:
            return kept
    elif repo_ids is None:
        repo_ids = [pk for pk, _, _ in ready_repositories(viewer)]
    entries = None
    if branches:
        repo_ids, entries = branch_entries(branches, repo_ids, viewer)
    term = Term("literal", text, 0)
    request = ExactRequest(
        matchers=[compile_term(term, False)],
        conditions=[PatternCondition([text])],
        scope=CandidateScope(repo_ids=repo_ids, branches=entries),
        fingerprint="count",
        limit=1,
        budget_ms=COUNT_BUDGET_MS,
        count_budget_ms=COUNT_BUDGET_MS,
        count_max_files=500,
    )
    # read where an exact search of these repositories would be: a replica that has replayed
    # their last swaps, else the primary
    result, _route = read_with_fallback(
        positions(repo_ids), lambda: run_exact(request), lambda _result: False
    )
    counted = (result.match_total, result.total_is_lower_bound)
    if key is not None and not connection.in_atomic_block:  # (nothing uncommitted is kept)
        COUNTS.put(key, counted)
    return counted
