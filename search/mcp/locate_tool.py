"""The MCP tool ``locate_issue``: an issue or stack trace -> the files (and functions) to change.

The same localisation as ``POST /api/localize`` (``search.localize``), answered compactly within
``max_tokens``: one entry per file -- ``rank``, ``repository``, ``path``, ``score``, ``why`` (the
reasons) and ``functions`` as ``symbol @ start-end`` with their reasons -- at the most detailed
level at which every file fits (all reasons, then two per entry, then the file and its functions
only), then fewer files (``truncated``). ``read`` says how to read a function: ``get_file``.
"""

from __future__ import annotations

from typing import Any

from accounts.visibility import Viewer
from search.localize.scoring import LocatedFile
from search.localize.service import MAX_ISSUE_CHARS, LocalizeRequest, localize
from search.mcp.budget import estimate_tokens, fit
from search.mcp.tools import (
    ToolInputError,
    branches_hint,
    check_max_tokens,
    resolve_repository,
)
from search.retrieval.scope import UnknownBranch

MAX_FILES = 30
DEFAULT_FILES = 10
DETAIL_LEVELS = (4, 2, 0)  # reasons shown per file and per function


def _render(file: LocatedFile, reasons: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "repository": file.repo_name,
        "path": file.path,
        "score": round(file.score, 3),
    }
    if reasons:
        entry["why"] = file.reasons[:reasons]
    functions = []
    for fn in file.functions:
        item: dict[str, Any] = {"symbol": fn.symbol, "lines": f"{fn.start_line}-{fn.end_line}"}
        if reasons:
            item["why"] = fn.reasons[: max(1, reasons // 2)]
        functions.append(item)
    if functions:
        entry["functions"] = functions
    return entry


def locate_issue(
    issue: str,
    repo: str | None = None,
    branch: str | None = None,
    limit: int | None = None,
    include_tests: bool | None = None,
    max_tokens: int | None = None,
    *,
    viewer: Viewer = Viewer(),  # noqa: B008 - frozen, never mutated
) -> dict[str, Any]:
    """The files of the repositories ``viewer`` may see most likely to need a change for
    ``issue``, each with the functions that made it rank and why."""
    if not isinstance(issue, str) or not issue.strip():
        raise ToolInputError(
            "invalid_issue",
            "issue must not be empty",
            "the issue's text or a stack trace, as written",
        )
    if len(issue) > MAX_ISSUE_CHARS:
        raise ToolInputError(
            "issue_too_long",
            f"issue is {len(issue)} characters",
            f"at most {MAX_ISSUE_CHARS} characters: the title, the description and the trace",
        )
    limit = DEFAULT_FILES if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_FILES:
        raise ToolInputError(
            "invalid_limit", f"limit={limit!r} is out of range", f"an integer 1..{MAX_FILES}"
        )
    budget = check_max_tokens(max_tokens)
    repo_ids = [resolve_repository(repo, viewer).pk] if repo is not None else None
    if branch is not None and (not isinstance(branch, str) or not branch.strip()):
        raise ToolInputError(
            "invalid_branch", "branch must be a branch name", "e.g. 'main', 'release/*' or '*'"
        )
    try:
        result = localize(
            LocalizeRequest(
                issue=issue,
                viewer=viewer,
                repo_ids=repo_ids,
                branches=[branch.strip()] if branch else None,
                limit=limit,
                include_tests=bool(include_tests),
            )
        )
    except UnknownBranch as exc:
        raise ToolInputError("unknown_branch", str(exc), branches_hint(viewer)) from None
    commits = {f.repo_name: f.commit for f in result.files}
    base: dict[str, Any] = {
        "read_from_issue": {
            k: v for k, v in result.clues.as_document().items() if v and k != "code_blocks"
        },
        "commits": commits,
        "read": "get_file(repo, path, start_line, end_line) opens a function's lines",
        "files": [],
    }
    files, cut = fit(base, result.files, _render, DETAIL_LEVELS, budget)
    for rank, entry in enumerate(files, start=1):
        entry["rank"] = rank
    answer = {
        **base,
        "files": files,
        "truncated": cut is not None and len(files) < len(result.files),
    }
    if answer["truncated"]:
        answer["truncated_by"] = (
            f"max_tokens={budget}: {len(result.files) - len(files)} files left out"
        )
    answer["tokens"] = estimate_tokens(answer)
    return answer
