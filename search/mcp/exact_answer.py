"""The compact MCP form of an exact or regex search and of ``sym:``, within a token budget.

Each file gives ``location`` (path:first-last matching line shown), its ``match_count`` and
matching lines as ``"<line>: <text>"`` -- up to 20 a file, fewer (10, 5, 2, 1) when the budget
needs it for every file of the page, then fewer files; ``more_lines`` counts the lines left
out. The commit is said once per repository (``commits``). ``total`` / ``truncated`` /
``next_cursor`` are the API's, except that a page the budget cut short is ``truncated`` with a
cursor that continues after the last file shown.
"""

from __future__ import annotations

from typing import Any

from search.exact.cursor import (
    MAX_OFFSET,
    PagePosition,
    decode_cursor,
    encode_cursor,
    encode_offset,
)
from search.exact.engine import FileHit
from search.mcp.budget import estimate_tokens, fit, largest_that_fits
from search.router import SearchOutcome

MAX_LINES_PER_FILE = 20
LINE_LEVELS = (MAX_LINES_PER_FILE, 10, 5, 2, 1)
MAX_LINE_CHARS = 300

SYNTAX_HINT = (
    'plain words, or "exact text", /regex/ (RE2) combined with OR, NOT/- and ( ), with filters '
    "repo:NAME lang:python file:GLOB -file:GLOB case:yes (also language: path: content:), "
    "sym:NAME (symbol:) for definitions, type:file for file names; mode auto|semantic|exact|regex"
)


def _file_entry(hit: FileHit, most: int) -> dict[str, Any]:
    shown = hit.matches[:most]
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
    return entry


def _cursor_after(outcome: SearchOutcome, kept: int) -> str:
    """The cursor of the files after the page's first ``kept``."""
    request, result = outcome.exact_request, outcome.exact
    assert request is not None and result is not None and kept > 0
    position = decode_cursor(request.cursor, request.fingerprint)
    shown = result.hits[:kept]
    after = PagePosition(
        after=shown[-1].file.key,
        files_before=position.files_before + kept,
        matches_before=position.matches_before + sum(h.match_count for h in shown),
    )
    return encode_cursor(after, request.fingerprint)


def exact_answer(outcome: SearchOutcome, max_tokens: int) -> dict[str, Any]:
    result = outcome.exact
    assert result is not None
    commits = {hit.file.repo_name: hit.file.commit for hit in result.hits}
    base: dict[str, Any] = {
        "query": outcome.parsed.text,
        "mode": outcome.mode,
        "total": result.total,
        "total_is_lower_bound": result.total_is_lower_bound,
        "match_total": result.match_total,
        "match_total_is_lower_bound": result.total_is_lower_bound,
        "truncated": result.truncated,
        # as long as any cursor the budget may put here
        "next_cursor": _cursor_after(outcome, len(result.hits))
        if result.hits
        else result.next_cursor,
        "timed_out": result.timed_out,
        "commits": commits,
        "files": [],
    }
    files, cut = fit(base, result.hits, _file_entry, LINE_LEVELS, max_tokens)

    def build(count: int) -> dict[str, Any]:
        answer = {**base, "next_cursor": result.next_cursor, "files": files[:count]}
        if cut is not None or count < len(files):
            answer["truncated"] = True
            if count < len(result.hits):
                answer["next_cursor"] = (
                    _cursor_after(outcome, count) if count else request_cursor(outcome)
                )
            answer["truncated_by"] = (
                f"max_tokens={max_tokens}: {len(result.hits) - count} of {len(result.hits)} "
                "files of this page left out"
                + (" (next_cursor goes on after the last one shown)" if count else "; raise it")
            )
        answer["tokens"] = estimate_tokens(answer) + 8
        return answer

    return largest_that_fits(build, len(files), max_tokens)


def request_cursor(outcome: SearchOutcome) -> str | None:
    """The cursor this page was asked with (nothing shown: the same page again)."""
    return outcome.exact_request.cursor if outcome.exact_request else None


def definitions_answer(outcome: SearchOutcome, max_tokens: int) -> dict[str, Any]:
    """``sym:NAME``: each definition's location, symbol, kind and how its name matched."""
    found = outcome.definitions or []
    base: dict[str, Any] = {
        "query": outcome.parsed.text,
        "mode": "symbol",
        "truncated": outcome.definitions_truncated,
        "next_cursor": _offset_cursor(outcome, len(found)),  # as long as any it may get
        "commits": {d.repo_name: d.commit for d in found},
        "definitions": [],
    }

    def render(d: Any, _: int) -> dict[str, Any]:
        return {
            "location": f"{d.path}:{d.start_line}-{d.end_line}",
            "repository": d.repo_name,
            "symbol": d.symbol,
            "kind": d.kind,
            "language": d.language,
            "match": d.tier,
        }

    definitions, cut = fit(base, found, render, (0,), max_tokens)

    def build(count: int) -> dict[str, Any]:
        answer = {
            **base,
            "next_cursor": outcome.definitions_next_cursor,
            "definitions": definitions[:count],
        }
        if cut is not None or count < len(definitions):
            answer["truncated"] = True
            answer["next_cursor"] = _offset_cursor(outcome, count)
            answer["truncated_by"] = (
                f"max_tokens={max_tokens}: {len(found) - count} of {len(found)} "
                "definitions left out (next_cursor goes on after the last one shown)"
            )
        answer["tokens"] = estimate_tokens(answer) + 8
        return answer

    return largest_that_fits(build, len(definitions), max_tokens)


def file_names_answer(outcome: SearchOutcome, max_tokens: int) -> dict[str, Any]:
    """``type:file``: ``repository:path`` per file, best match first."""
    result = outcome.files
    assert result is not None
    base: dict[str, Any] = {
        "query": outcome.parsed.text,
        "mode": "file",
        "total": result.total,
        "truncated": result.truncated,
        "next_cursor": result.cursor_after(len(result.hits)),  # as long as any it may get
        "commits": {h.file.repo_name: h.file.commit for h in result.hits},
        "files": [],
    }
    entries = [f"{h.file.repo_name}:{h.file.path}" for h in result.hits]

    def build(count: int) -> dict[str, Any]:
        answer = {**base, "next_cursor": result.next_cursor, "files": entries[:count]}
        if count < len(entries):
            answer["truncated"] = True
            answer["next_cursor"] = result.cursor_after(count)
            answer["truncated_by"] = (
                f"max_tokens={max_tokens}: {len(entries) - count} of {len(entries)} files of "
                "this page left out (next_cursor goes on after the last one shown)"
            )
        answer["tokens"] = estimate_tokens(answer) + 8
        return answer

    return largest_that_fits(build, len(entries), max_tokens)


def _offset_cursor(outcome: SearchOutcome, shown: int) -> str | None:
    """The cursor of the definitions after this page's first ``shown``."""
    offset = outcome.definitions_offset + shown
    if not offset:
        return None
    return encode_offset(min(offset, MAX_OFFSET), outcome.definitions_fingerprint)
