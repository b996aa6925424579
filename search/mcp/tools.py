"""The MCP read tools' work, as plain synchronous functions (no MCP types here).

``search_code``, ``list_repositories`` and ``get_file`` return JSON-ready dicts. Bad input
raises ``ToolInputError`` whose message is a JSON object ``{"error": {"code", "message",
"valid"}}`` -- ``valid`` says what acceptable input looks like, so an agent can correct itself.
Every argument left unset (None) takes the server default in ``DEFAULTS``.

Each tool takes ``viewer`` (``accounts.visibility.Viewer``; default: unrestricted repositories
only): it lists, resolves, searches and reads only the repositories that viewer may see, and a
repository it may not see is "no repository" -- the same error, and left out of the names the
error suggests.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from accounts.visibility import Viewer
from indexing.models import FINISHED_JOB_STATES, Repository, RepositoryStatus, SourceFile
from indexing.repository_refs import MAX_NAMES_COMPARED, nearest_names
from indexing.selectors import indexed_branch_summaries
from indexing.visible import visible_repositories
from search import contract, fair_use
from search.exact.cursor import MAX_CURSOR_CHARS
from search.exact.errors import QueryRejected
from search.exact.mode_requests import MODES
from search.mcp.budget import (
    CHARS_PER_TOKEN,
    DEFAULT_MAX_TOKENS,
    MAX_MAX_TOKENS,
    MIN_MAX_TOKENS,
    compact_json,
    estimate_tokens,
)
from search.mcp.exact_answer import (
    SYNTAX_HINT,
    definitions_answer,
    exact_answer,
    file_names_answer,
)
from search.mcp.hybrid_answer import hybrid_answer
from search.mcp.identity import current_caller
from search.retrieval.query import InvalidGlob
from search.retrieval.scope import UnknownBranch, UnknownRepositories
from search.router import SearchCall, run_search

DEFAULTS: dict[str, Any] = {
    "k": 8,
    "rerank": False,
    "expand": False,
    "include_tests": None,  # automatic: included when the query is about tests
    "include_docs": None,  # automatic: included when the query is about docs
}
MAX_K = 30
MAX_QUERY_CHARS = 1000
MAX_FILE_LINES = 400
MAX_REPO_REF_CHARS = 300  # as indexing.repository_refs: longer than any id or name


class ToolInputError(ValueError):
    """Input the tool cannot use; ``str()`` is the structured JSON error. ``details`` are the
    API's for the same error (``position``, ``suggestion``, ``suggested_query``...)."""

    def __init__(
        self, code: str, message: str, valid: str, details: dict[str, Any] | None = None
    ) -> None:
        error: dict[str, Any] = {"code": code, "message": message, "valid": valid}
        if details:
            error["details"] = details
        self.payload = {"error": error}
        super().__init__(json.dumps(self.payload, default=str))


def _repositories_hint(viewer: Viewer) -> str:
    names = list(visible_repositories(viewer).order_by("name").values_list("name", flat=True)[:20])
    listed = ", ".join(repr(n) for n in names) if names else "none are indexed yet"
    return f"a repository name or id from list_repositories ({listed})"


def branches_hint(viewer: Viewer) -> str:
    from indexing.models import IndexedBranch

    visible = visible_repositories(viewer)
    names = {*visible.values_list("branch", flat=True)}
    names |= set(
        IndexedBranch.objects.filter(repository__in=visible, generation__gt=0).values_list(
            "name", flat=True
        )
    )
    listed = ", ".join(repr(n) for n in sorted(n for n in names if n)[:20]) or "none yet"
    return f"an indexed branch ({listed}), a glob such as 'release/*', or '*'"


def resolve_repository(repo: str, viewer: Viewer) -> Repository:
    """The repository named ``repo`` (its id or its name) among those ``viewer`` may see."""
    if not isinstance(repo, str) or not repo.strip():
        raise ToolInputError(
            "invalid_repo", "repo must be a non-empty string", _repositories_hint(viewer)
        )
    repo = repo.strip()
    if "\x00" in repo or len(repo) > MAX_REPO_REF_CHARS:  # no name holds one: not found
        raise ToolInputError("unknown_repo", "no such repository", _repositories_hint(viewer))
    visible = visible_repositories(viewer)
    try:
        found = visible.filter(pk=uuid.UUID(repo)).first()
    except ValueError:
        matches = list(visible.filter(name=repo)[:3])
        if len(matches) > 1:
            ids = ", ".join(str(m.pk) for m in matches)
            raise ToolInputError(
                "ambiguous_repo", f"several repositories are named {repo!r}", f"one id of: {ids}"
            ) from None
        found = matches[0] if matches else None
    if found is None:
        names = visible.order_by("name").values_list("name", flat=True)[:MAX_NAMES_COMPARED]
        near = nearest_names(repo, list(dict.fromkeys(names)))
        hint = f" — did you mean {', '.join(repr(n) for n in near)}?" if near else ""
        raise ToolInputError(
            "unknown_repo", f"no repository {repo!r}{hint}", _repositories_hint(viewer)
        )
    return found


def _choose(name: str, value: Any) -> Any:
    return DEFAULTS[name] if value is None else value


def check_max_tokens(value: int | None) -> int:
    """``max_tokens`` (None: the default), refused outside its bounds."""
    if value is None:
        return DEFAULT_MAX_TOKENS
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(
            "invalid_max_tokens", f"max_tokens={value!r} is not an integer", _BUDGET_RANGE
        )
    if not MIN_MAX_TOKENS <= value <= MAX_MAX_TOKENS:
        raise ToolInputError(
            "invalid_max_tokens", f"max_tokens={value} is out of range", _BUDGET_RANGE
        )
    return value


_BUDGET_RANGE = f"an integer {MIN_MAX_TOKENS}..{MAX_MAX_TOKENS} (default {DEFAULT_MAX_TOKENS})"


def search_code(
    query: str,
    k: int | None = None,
    rerank: bool | None = None,
    expand: bool | None = None,
    include_tests: bool | None = None,
    include_docs: bool | None = None,
    repo: str | None = None,
    mode: str | None = None,
    cursor: str | None = None,
    max_tokens: int | None = None,
    branch: str | None = None,
    *,
    viewer: Viewer = Viewer(),  # noqa: B008 - frozen, never mutated
) -> dict[str, Any]:
    """The query language (``search.exact.query_language``) in ``mode``, the answer within
    ``max_tokens``; hybrid answers gain, with ``expand``, definitions the hits call and a few
    callers."""
    if not isinstance(query, str) or not query.strip():
        raise ToolInputError(
            "invalid_query", "query must not be empty", "words or code, e.g. 'pool size'"
        )
    if len(query) > MAX_QUERY_CHARS:
        raise ToolInputError(
            "query_too_long",
            f"query is {len(query)} characters",
            f"at most {MAX_QUERY_CHARS} characters",
        )
    k = _choose("k", k)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ToolInputError("invalid_k", f"k={k!r} is out of range", f"an integer 1..{MAX_K}")
    budget = check_max_tokens(max_tokens)
    if cursor is not None and (not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_CHARS):
        raise ToolInputError(
            "invalid_cursor", "cursor is not a next_cursor", "next_cursor of the same query"
        )
    mode = mode or "auto"
    if mode not in MODES:
        raise ToolInputError("invalid_mode", f"mode={mode!r} is unknown", " | ".join(MODES))
    repo_ids = [resolve_repository(repo, viewer).pk] if repo is not None else None
    if branch is not None and (not isinstance(branch, str) or not branch.strip()):
        raise ToolInputError(
            "invalid_branch", "branch must be a branch name", "e.g. 'main', 'release/*' or '*'"
        )
    request = contract.search_request(
        {
            "query": query.strip(),
            "limit": k,
            "use_rerank": bool(_choose("rerank", rerank)),
            "repo_ids": repo_ids,
            "include_tests": _choose("include_tests", include_tests),
            "include_docs": _choose("include_docs", include_docs),
            "branches": [branch.strip()] if branch is not None else None,
        },
        viewer=viewer,
    )
    try:
        who = current_caller()  # costly searches: a share per account (search.fair_use)
        caller = fair_use.caller_of(who.user, who.address)
        outcome = run_search(SearchCall(request, mode=mode, cursor=cursor, caller=caller))  # type: ignore[arg-type]
    except fair_use.SearchBusy as exc:
        raise ToolInputError(exc.code, exc.message, "the same call shortly", exc.details) from None
    except QueryRejected as exc:
        # The API's code, message and details (its suggestion), with what input looks like.
        valid = _repositories_hint(viewer) if "repo" in exc.details else SYNTAX_HINT
        raise ToolInputError(exc.code, exc.message, valid, exc.details) from None
    except UnknownBranch as exc:
        raise ToolInputError("unknown_branch", str(exc), branches_hint(viewer)) from None
    except (UnknownRepositories, InvalidGlob) as exc:  # pragma: no cover - resolved above
        raise ToolInputError("invalid_scope", str(exc), _repositories_hint(viewer)) from None
    if outcome.definitions is not None:
        answer = definitions_answer(outcome, budget)
    elif outcome.files is not None:
        answer = file_names_answer(outcome, budget)
    elif outcome.hybrid is None:
        answer = exact_answer(outcome, budget)
    else:
        answer = hybrid_answer(
            outcome, expand=bool(_choose("expand", expand)), viewer=viewer, max_tokens=budget
        )
    # The filters that matched no file or had no value, as the API says them (notices).
    return {**answer, "notices": outcome.notices} if outcome.notices else answer


def list_repositories(*, viewer: Viewer = Viewer()) -> dict[str, Any]:  # noqa: B008
    """Every repository ``viewer`` may see with its state and indexed commit."""
    rows = visible_repositories(viewer).order_by("name")
    return {
        "repositories": [
            {
                "id": str(r.pk),
                "name": r.name,
                "url": r.url,
                "status": r.status,
                "searchable": r.status == RepositoryStatus.READY and r.active_generation > 0,
                "commit": r.last_indexed_commit,
                "indexed_at": r.last_indexed_at.isoformat() if r.last_indexed_at else None,
                "files": r.file_count,
                "chunks": r.chunk_count,
                "behind": r.behind,
            }
            for r in rows
        ]
    }


def repository_status(repo: str, *, viewer: Viewer = Viewer()) -> dict[str, Any]:  # noqa: B008
    """How fresh one repository's index is: the indexed commit and when, the remote's tip at
    the last check, whether the remote has moved on, the job in progress, and the same for
    each other branch indexed (``branches``)."""
    r = resolve_repository(repo, viewer)
    job = r.jobs.exclude(state__in=FINISHED_JOB_STATES).order_by("-created_at").first()
    return {
        "id": str(r.pk),
        "name": r.name,
        "url": r.url,
        "branch": r.branch,
        "status": r.status,
        "error": r.error,
        "commit": r.last_indexed_commit,
        "indexed_at": r.last_indexed_at.isoformat() if r.last_indexed_at else None,
        "remote_tip": r.remote_tip,
        "last_polled_at": r.last_polled_at.isoformat() if r.last_polled_at else None,
        "next_poll_at": r.next_poll_at.isoformat() if r.next_poll_at else None,
        "poll_error": r.poll_error,
        "behind": r.behind,
        "job": None if job is None else {"id": job.pk, "kind": job.kind, "state": job.state},
        "branches": indexed_branch_summaries(r),
    }


def get_file(
    repo: str,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    max_tokens: int | None = None,
    *,
    viewer: Viewer = Viewer(),  # noqa: B008 - frozen, never mutated
) -> dict[str, Any]:
    """Lines ``start_line..end_line`` (1-based, at most 400, and as many as fit in
    ``max_tokens``) of an indexed file at its commit."""
    budget = check_max_tokens(max_tokens)
    from indexing.clone_paths import repository_dir
    from indexing.git.tree import GitTreeReader

    repository = resolve_repository(repo, viewer)
    if not repository.active_generation:
        raise ToolInputError(
            "not_indexed",
            f"{repository.name} has no indexed version yet",
            _repositories_hint(viewer),
        )
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        raise ToolInputError(
            "invalid_path", "path must be a file path (no NUL)", "a path from search_code"
        )
    source = SourceFile.objects.filter(
        repository=repository, generation=repository.active_generation, path=path.strip("/")
    ).first()
    if source is None:
        raise ToolInputError(
            "unknown_path",
            f"{repository.name} has no indexed file {path!r}",
            "a path exactly as search_code returns it, e.g. 'src/app/models.py'",
        )
    try:
        with GitTreeReader(repository_dir(repository.pk)) as reader:
            data = reader.read_blob(source.blob_sha)
    except (OSError, KeyError, ValueError) as exc:
        raise ToolInputError(
            "unreadable", f"the clone of {repository.name} no longer holds {path!r}", "re-index"
        ) from exc
    lines = data.decode("utf-8", errors="replace").splitlines()
    total = len(lines)
    start = 1 if start_line is None else start_line
    end = min(total, start + MAX_FILE_LINES - 1) if end_line is None else end_line
    for name, value in (("start_line", start), ("end_line", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolInputError(f"invalid_{name}", f"{name} must be an integer", "1-based lines")
    if start < 1 or start > max(total, 1) or end < start:
        raise ToolInputError(
            "invalid_range",
            f"lines {start}-{end} are outside {path!r} ({total} lines)",
            f"1 <= start_line <= end_line, start_line <= {total}",
        )
    last = min(end, total, start + MAX_FILE_LINES - 1)
    # Cut at the cap: the lines asked for (by default, the rest of the file) go on past `last`.
    wanted_end = total if end_line is None else min(end, total)
    answer: dict[str, Any] = {
        "repository": repository.name,
        "repo_id": str(repository.pk),
        "path": source.path,
        "commit": repository.last_indexed_commit,
        "start_line": start,
        "end_line": last,
        "total_lines": total,
        "truncated": last < wanted_end,
        "truncated_by": f"the {MAX_FILE_LINES}-line cap" if last < wanted_end else None,
        "next_start_line": last + 1 if last < total else None,
        "tokens": 0,
        "content": "",
    }
    shown, cut_line = _lines_within(lines[start - 1 : last], budget - estimate_tokens(answer) - 8)
    if len(shown) < last - start + 1 or cut_line:
        last = start + len(shown) - 1 if not cut_line else start
        answer.update(
            end_line=last,
            truncated=True,
            truncated_by=f"max_tokens={budget}"
            + (f": line {start} is shown in part" if cut_line else ""),
            next_start_line=last + 1 if last < total else None,
        )
    answer["content"] = "\n".join(shown)
    answer["tokens"] = estimate_tokens(answer)
    return answer


def _lines_within(lines: list[str], tokens: int) -> tuple[list[str], bool]:
    """The first of ``lines`` whose JSON text fits in ``tokens`` -- at least part of the
    first line, then ``True`` says that line was cut."""
    room = max(tokens, 1) * CHARS_PER_TOKEN
    kept: list[str] = []
    for line in lines:
        cost = len(compact_json(line)) - 2 + 2  # the quotes out, the "\n" joining it in
        if cost > room:
            if not kept:  # one line longer than the budget (minified code): part of it
                return [line[: max(room // 2, 1)]], True
            break
        kept.append(line)
        room -= cost
    return kept, False
