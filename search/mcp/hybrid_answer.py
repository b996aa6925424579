"""The compact MCP form of a hybrid (natural-language) search, within a token budget.

One entry per hit: ``location`` (``path:start-end``), ``repository``, ``symbol``, ``kind``,
``score``, ``semantic`` (found by the vector lists alone: similar, without the words) and a
``snippet`` -- as long as the budget allows for every hit (20 lines, then 10, 5, 2, none), then
fewer hits. The commit, branch and index time are said once per repository. ``truncated`` is
true when more results exist than are shown (the next page, or hits the budget left out);
``next_cursor`` goes on from the last hit shown. With ``expand`` the definitions the hits call
and a few callers follow the hits (``origin``/``via``); the budget cuts them first.
"""

from __future__ import annotations

from typing import Any

from accounts.visibility import Viewer
from search.ask.callgraph import ExpansionLimits, expand_call_graph
from search.ask.context import ContextSnippet, load_snippets
from search.mcp.budget import estimate_tokens, fit, largest_that_fits, trim_lines
from search.router import SearchOutcome

SNIPPET_LEVELS = (20, 10, 5, 2, 0)


def snippet_hit(
    snippet: ContextSnippet,
    lines: int,
    *,
    score: float | None,
    semantic: bool | None,
    branch: bool = False,
) -> dict[str, Any]:
    location = f"{snippet.path}:{snippet.start_line}-{snippet.end_line}"
    entry: dict[str, Any] = {
        "location": location,
        "repository": snippet.repo_name,
        "symbol": snippet.symbol,
        "kind": snippet.kind,
    }
    if score is not None:
        entry["score"] = round(score, 4)
    if semantic is not None:
        entry["semantic"] = semantic
    if snippet.origin != "search":
        entry["origin"], entry["via"] = snippet.origin, snippet.via
    if branch:
        entry["branch"] = snippet.branch
    entry["snippet"] = trim_lines(
        snippet.content,
        lines,
        f"get_file(repo, path, {snippet.start_line}, {snippet.end_line}) for {location}",
    )
    return entry


def _freshness(
    snippets: list[ContextSnippet], branches: bool = False
) -> tuple[dict[str, str], dict[str, Any]]:
    """Commit, branch and index time once per repository (per ``repository@branch`` when a
    branch filter may bring several branches of one repository)."""
    commits: dict[str, str] = {}
    indexed: dict[str, Any] = {}
    for s in snippets:
        key = f"{s.repo_name}@{s.branch}" if branches else s.repo_name
        commits[key] = s.commit
        indexed[key] = {
            "branch": s.branch,
            "indexed_at": s.indexed_at.isoformat() if s.indexed_at else None,
        }
    return commits, indexed


def hybrid_answer(
    outcome: SearchOutcome, *, expand: bool, viewer: Viewer, max_tokens: int
) -> dict[str, Any]:
    result, page, request = outcome.hybrid, outcome.hybrid_page, outcome.hybrid_request
    assert result is not None and page is not None and request is not None
    semantic = {h.chunk_id for h in result.hits if h.bm25_score is None}
    scores = {h.chunk_id: h.combined_score for h in result.hits}
    on_branches = bool(request.branches)
    found = load_snippets(
        [h.chunk_id for h in result.hits], viewer, scores=scores, any_branch=on_branches
    )
    if on_branches:  # each hit's branch and its freshness, as the executor named them
        named = {h.chunk_id: h for h in result.hits}
        for snippet in found:
            hit = named[snippet.chunk_id]
            snippet.branch, snippet.commit, snippet.indexed_at = (
                hit.branch,
                hit.commit,
                hit.indexed_at,
            )
    extra = expand_call_graph(found, viewer, ExpansionLimits()) if expand else []
    commits, indexed = _freshness(found + extra, on_branches)
    base: dict[str, Any] = {
        "query": request.query,
        "mode": "hybrid",
        "exact_matches": outcome.exact_matches,
        **(
            {"exact_matches_is_lower_bound": outcome.exact_matches_is_lower_bound}
            if outcome.exact_matches is not None
            else {}
        ),
        "total": page.total,
        **({"only_weak_matches": True} if page.only_weak_matches else {}),
        "truncated": page.truncated,
        "next_cursor": page.next_cursor,
        "commits": commits,
        "indexed": indexed,
        "stages": {t.name: t.status + (f" ({t.reason})" if t.reason else "") for t in result.trace},
        "hits": [],
    }
    items = [(s, True) for s in found] + [(s, False) for s in extra]
    if base["next_cursor"] is None and found:  # as long as a cursor the budget may add
        base["next_cursor"] = page.cursor_after([s.chunk_id for s in found])

    def render(item: tuple[ContextSnippet, bool], lines: int) -> dict[str, Any]:
        snippet, retrieved = item
        if not retrieved:
            return snippet_hit(snippet, lines, score=None, semantic=None)
        return snippet_hit(
            snippet,
            lines,
            score=snippet.score,
            semantic=snippet.chunk_id in semantic,
            branch=on_branches,
        )

    rendered, cut = fit(base, items, render, SNIPPET_LEVELS, max_tokens)

    def build(count: int) -> dict[str, Any]:
        answer = {**base, "next_cursor": page.next_cursor, "hits": rendered[:count]}
        shown = [s.chunk_id for s, retrieved in items[:count] if retrieved]
        if cut is not None or count < len(rendered):
            answer["truncated"] = True
            if len(shown) < len(found):
                answer["next_cursor"] = page.cursor_after(shown)
            answer["truncated_by"] = (
                f"max_tokens={max_tokens}: {len(items) - count} of {len(items)} hits left out"
                + (" (next_cursor goes on after the last one shown)" if count else "; raise it")
            )
        answer["tokens"] = estimate_tokens(answer) + 8  # with this field itself
        return answer

    return largest_that_fits(build, len(rendered), max_tokens)
