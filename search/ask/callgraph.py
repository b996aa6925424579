"""Call-graph expansion: from retrieved chunks to the definitions they call, and a few callers.

Everything is a query over what indexing stored: each chunk's ``calls`` (names at its
tree-sitter call sites, GIN-indexed) and ``symbol_name`` (the name it defines). Callees are
followed breadth-first to ``depth`` levels; a name is resolved within the same repository's
active generation, preferring a definition in the same file, then the same directory (module
or package), then anywhere -- and only the best one per name; a name defined in many places,
none of them near the caller, is ambiguous and not followed, so that a common name (``run``,
``close``) cannot flood the context with unrelated code. Callers are the live chunks whose ``calls``
contain a retrieved chunk's name (``calls @> '["name"]'``). Test code is only followed from
test code. Both lists are bounded. Every lookup keeps to the repositories the viewer may see.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from accounts.visibility import Viewer
from search.ask.context import ContextSnippet, live_chunks, snippet_from_chunk

# Names that resolve to far too many definitions to be informative.
# ``get`` / ``set`` are mostly dict and cache calls, not the repository's own definitions.
_IGNORED_NAMES = frozenset({"__init__", "main", "setUp", "tearDown", "get", "set"})
_AMBIGUOUS = 3  # a name with this many definitions, none near the caller, is not followed
_ROWS_PER_LEVEL = 400


@dataclass(frozen=True)
class ExpansionLimits:
    depth: int = 2  # levels of callees followed from the retrieved chunks
    max_callees: int = 6  # definitions added in all
    max_callers: int = 3  # callers added in all
    per_name: int = 1  # definitions kept per called name


def _closeness(caller: ContextSnippet, path: str) -> int:
    """0: same file, 1: same directory, 2: a parent/child directory, 3: elsewhere."""
    if path == caller.path:
        return 0
    here, there = posixpath.dirname(caller.path), posixpath.dirname(path)
    if here == there:
        return 1
    if here.startswith(there) or there.startswith(here):
        return 2
    return 3


def _callees(
    viewer: Viewer,
    frontier: Sequence[ContextSnippet],
    seen: set[int],
    level: int,
    limits: ExpansionLimits,
    budget: int,
) -> list[ContextSnippet]:
    wanted: list[tuple[ContextSnippet, str]] = []  # (caller, name) in retrieval order
    for caller in frontier:
        for name in caller.calls:
            if name and name not in _IGNORED_NAMES and name != caller.symbol_name:
                wanted.append((caller, name))
    if not wanted:
        return []
    names_by_repo: dict[object, set[str]] = {}
    for caller, name in wanted:
        names_by_repo.setdefault(caller.repo_id, set()).add(name)
    definitions: dict[tuple[object, str], list[ContextSnippet]] = {}
    for repo_id, names in names_by_repo.items():
        rows = (
            live_chunks(viewer, repository_id=repo_id, symbol_name__in=sorted(names))
            .exclude(pk__in=seen)
            .exclude(is_doc=True)
            .order_by("path", "start_line")[:_ROWS_PER_LEVEL]
        )
        for chunk in rows:
            definitions.setdefault((repo_id, chunk.symbol_name), []).append(
                snippet_from_chunk(chunk)
            )
    added: list[ContextSnippet] = []
    for caller, name in wanted:
        if len(added) >= budget:
            break
        candidates = [
            d
            for d in definitions.get((caller.repo_id, name), [])
            if d.chunk_id not in seen and (caller.is_test or not d.is_test)
        ]
        if not candidates:
            continue
        candidates.sort(key=lambda d: (_closeness(caller, d.path), d.path, d.start_line))
        if len(candidates) >= _AMBIGUOUS and _closeness(caller, candidates[0].path) > 1:
            continue
        for definition in candidates[: limits.per_name]:
            if len(added) >= budget:
                break
            definition.origin = "callee"
            definition.via = caller.symbol or caller.path
            definition.depth = level
            seen.add(definition.chunk_id)
            added.append(definition)
    return added


def _callers(
    viewer: Viewer, seeds: Sequence[ContextSnippet], seen: set[int], limits: ExpansionLimits
) -> list[ContextSnippet]:
    added: list[ContextSnippet] = []
    for seed in seeds:
        if len(added) >= limits.max_callers:
            break
        name = seed.symbol_name
        if not name or name in _IGNORED_NAMES:
            continue
        rows = (
            live_chunks(viewer, repository_id=seed.repo_id, calls__contains=[name])
            .exclude(pk__in=seen)
            .order_by("is_test", "path", "start_line")[:20]
        )
        found = [snippet_from_chunk(chunk) for chunk in rows]
        found = [f for f in found if seed.is_test or not f.is_test]
        found.sort(key=lambda f: (_closeness(seed, f.path), f.path, f.start_line))
        for caller in found[:1]:
            caller.origin = "caller"
            caller.via = seed.symbol or seed.path
            caller.depth = 1
            seen.add(caller.chunk_id)
            added.append(caller)
    return added


def expand_call_graph(
    seeds: Sequence[ContextSnippet], viewer: Viewer, limits: ExpansionLimits | None = None
) -> list[ContextSnippet]:
    """Definitions the ``seeds`` call (to ``limits.depth``) and a few of their callers.

    The seeds themselves are never returned; every returned snippet is marked ``callee`` or
    ``caller`` with ``via`` (the symbol it was reached from) and ``depth``.
    """
    limits = limits or ExpansionLimits()
    seen = {s.chunk_id for s in seeds}
    callees: list[ContextSnippet] = []
    frontier: Sequence[ContextSnippet] = seeds
    for level in range(1, max(0, limits.depth) + 1):
        budget = limits.max_callees - len(callees)
        if budget <= 0 or not frontier:
            break
        found = _callees(viewer, frontier, seen, level, limits, budget)
        callees.extend(found)
        frontier = found
    callers = _callers(viewer, seeds, seen, limits) if limits.max_callers > 0 else []
    return callees + callers
