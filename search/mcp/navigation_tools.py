"""The MCP navigation tools: ``find_symbol``, ``find_references`` and ``list_files``.

Plain functions over the same services as ``/api/symbols`` (``search.symbols``) and the file
table of the indexed generation, returning compact JSON-ready dicts: one line of text per
result where that says it all, the commit once per repository. Output is bounded (``limit``
at most 50 definitions, 200 references, 500 files) and says so with ``truncated``. Every tool
takes ``viewer`` and reads only what it may see; bad input is ``ToolInputError``.
"""

from __future__ import annotations

from typing import Any

from accounts.visibility import Viewer
from indexing.models import SourceFile
from search.exact.errors import QueryRejected
from search.mcp.tools import ToolInputError, branches_hint, resolve_repository
from search.retrieval.query import InvalidGlob, glob_to_regex
from search.retrieval.scope import UnknownBranch
from search.symbols.references import find_references as references_of
from search.symbols.service import search_symbols

MAX_DEFINITIONS = 50
MAX_REFERENCES = 200
MAX_FILES = 500
MAX_LINE_CHARS = 200


def _limit(value: int | None, default: int, most: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ToolInputError("invalid_limit", f"limit={value!r} is out of range", f"1..{most}")
    return value


def _repo_id(repo: str | None, viewer: Viewer) -> str | None:
    return None if repo is None else str(resolve_repository(repo, viewer).pk)


def _rejected(exc: QueryRejected, valid: str) -> ToolInputError:
    return ToolInputError("invalid_name", exc.message, valid)


def find_symbol(
    name: str,
    repo: str | None = None,
    lang: str | None = None,
    kind: str | None = None,
    limit: int | None = None,
    branch: str | None = None,
    *,
    viewer: Viewer = Viewer(),  # noqa: B008 - frozen, never mutated
) -> dict[str, Any]:
    """Definitions whose name matches ``name``: exact, prefix, substring, then similar; on each
    repository's default branch, or on ``branch`` (a name, a glob or ``*``)."""
    count = _limit(limit, 20, MAX_DEFINITIONS)
    repo_id = _repo_id(repo, viewer)
    if branch is not None and (not isinstance(branch, str) or not branch.strip()):
        raise ToolInputError(
            "invalid_branch", "branch must be a branch name", "e.g. 'main', 'release/*' or '*'"
        )
    try:
        answer = search_symbols(
            name,
            viewer,
            repo=repo_id,
            lang=lang,
            kind=kind,
            branch=branch.strip() if branch else None,
            limit=count,
        )
    except QueryRejected as exc:
        raise _rejected(exc, "one name (no spaces), up to 200 characters, e.g. 'send'") from None
    except UnknownBranch as exc:
        raise ToolInputError("unknown_branch", str(exc), branches_hint(viewer)) from None
    return {
        "query": answer.query,
        "definitions": [
            {
                "location": f"{d.path}:{d.start_line}-{d.end_line}",
                "repository": d.repo_name,
                "symbol": d.symbol,
                "kind": d.kind,
                "language": d.language,
                "match": d.tier,
                **({"branch": d.branch} if d.branch else {}),
            }
            for d in answer.hits
        ],
        "truncated": answer.truncated,
        "commits": {
            (f"{d.repo_name}@{d.branch}" if d.branch else d.repo_name): d.commit
            for d in answer.hits
        },
        **({"notices": answer.notices} if answer.notices else {}),
    }


def find_references(
    name: str,
    repo: str | None = None,
    limit: int | None = None,
    *,
    viewer: Viewer = Viewer(),  # noqa: B008 - frozen, never mutated
) -> dict[str, Any]:
    """Where the identifier ``name`` is used: recorded call sites and whole-word matches."""
    count = _limit(limit, 50, MAX_REFERENCES)
    repo_id = _repo_id(repo, viewer)
    try:
        answer = references_of(name, viewer, repo=repo_id, limit=count)
    except QueryRejected as exc:
        raise _rejected(exc, "one identifier, e.g. 'send' or 'Client'") from None
    commits = {r.repo_name: r.commit for r in answer.references}
    return {
        "name": answer.name,
        "references": [
            f"{r.repo_name}:{r.path}:{r.line}: {r.text.strip()[:MAX_LINE_CHARS]}"
            + (" (call)" if r.via == "call" else "")
            for r in answer.references
        ],
        "total": len(answer.references),
        "truncated": answer.truncated,
        "commits": commits,
    }


def _directory(path: str | None) -> str:
    if path is None:
        return ""
    if not isinstance(path, str) or "\x00" in path or "\\" in path:
        raise ToolInputError("invalid_path", "path must be a directory in the repository", "src")
    cleaned = path.strip().strip("/")
    if cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if any(part in ("", ".", "..") for part in cleaned.split("/")) and cleaned:
        raise ToolInputError(
            "invalid_path", f"{path!r} is not a directory path", "e.g. 'src/app' (no '..')"
        )
    return cleaned


def list_files(
    repo: str,
    path: str | None = None,
    glob: str | None = None,
    *,
    viewer: Viewer = Viewer(),  # noqa: B008 - frozen, never mutated
) -> dict[str, Any]:
    """The indexed files of ``repo`` under ``path`` matching ``glob``, in path order."""
    repository = resolve_repository(repo, viewer)
    if not repository.active_generation:
        raise ToolInputError(
            "not_indexed", f"{repository.name} has no indexed version yet", "list_repositories"
        )
    directory = _directory(path)
    rows = SourceFile.objects.filter(repository=repository, generation=repository.active_generation)
    if directory:
        rows = rows.filter(path__startswith=directory + "/")
    if glob is not None:
        try:
            rows = rows.filter(path__regex=glob_to_regex(glob))
        except InvalidGlob as exc:
            raise ToolInputError(
                "invalid_glob", str(exc), "e.g. '*.py' or 'src/**/test_*.py'"
            ) from None
    total = rows.count()
    paths = list(rows.order_by("path").values_list("path", flat=True)[:MAX_FILES])
    return {
        "repository": repository.name,
        "commit": repository.last_indexed_commit,
        "path": directory,
        "files": paths,
        "total": total,
        "truncated": total > len(paths),
    }
