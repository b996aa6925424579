"""The compact MCP form of an exact or regex search: one entry per file, matching lines only.

Each file gives ``location`` (path:first-last matching line), its ``match_count`` and up to
``MAX_LINES_PER_FILE`` matching lines as ``"<line>: <text>"``; the commit is said once for the
answer's repositories, not per hit. ``total`` / ``truncated`` / ``next_cursor`` are the API's.
"""

from __future__ import annotations

from typing import Any

from search.exact.dispatch import SearchOutcome

MAX_LINES_PER_FILE = 20
MAX_LINE_CHARS = 300

SYNTAX_HINT = (
    'plain words, or "exact text", /regex/ (RE2), with filters repo:NAME lang:python '
    "file:GLOB -file:GLOB case:yes, sym:NAME for definitions; mode auto|semantic|exact|regex"
)


def exact_answer(outcome: SearchOutcome) -> dict[str, Any]:
    result = outcome.exact
    assert result is not None
    files = []
    commits: dict[str, str] = {}
    for hit in result.hits:
        commits[hit.file.repo_name] = hit.file.commit
        shown = hit.matches[:MAX_LINES_PER_FILE]
        first = shown[0].line if shown else 1
        last = shown[-1].line if shown else 1
        entry: dict[str, Any] = {
            "location": f"{hit.file.path}:{first}-{last}",
            "repository": hit.file.repo_name,
            "path": hit.file.path,
            "match_count": hit.match_count,
            "lines": [f"{m.line}: {m.text[:MAX_LINE_CHARS]}" for m in shown],
        }
        if hit.match_count > len(shown):
            entry["more_lines"] = hit.match_count - len(shown)
        files.append(entry)
    return {
        "query": outcome.parsed.text,
        "mode": outcome.mode,
        "files": files,
        "total": result.total,
        "total_is_lower_bound": result.total_is_lower_bound,
        "match_total": result.match_total,
        "truncated": result.truncated,
        "next_cursor": result.next_cursor,
        "timed_out": result.timed_out,
        "commits": commits,
    }


def definitions_answer(outcome: SearchOutcome) -> dict[str, Any]:
    """``sym:NAME``: each definition's location, symbol, kind and how its name matched."""
    found = outcome.definitions or []
    return {
        "query": outcome.parsed.text,
        "mode": "symbol",
        "definitions": [
            {
                "location": f"{d.path}:{d.start_line}-{d.end_line}",
                "repository": d.repo_name,
                "symbol": d.symbol,
                "kind": d.kind,
                "language": d.language,
                "match": d.tier,
            }
            for d in found
        ],
        "truncated": outcome.definitions_truncated,
        "commits": {d.repo_name: d.commit for d in found},
    }
