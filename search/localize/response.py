"""The answer document of a localisation, built once for the API, the MCP tool and the page.

Files best first, each with ``rank``, ``score``, ``reasons`` (why it ranked, in words), a ``url``
to the file view (at its best function's lines) and ``functions`` -- the definitions that made it
rank, each with its lines, score, reasons and ``url``. ``clues`` says what was read from the
issue (paths, frames, identifiers, errors), ``queries`` the hybrid searches that ran, ``trace``
each stage's time.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from accounts.visibility import Viewer
from indexing.models import Repository
from indexing.permalinks import Permalinks
from search.localize.service import LocalizeResult


def localize_document(result: LocalizeResult, viewer: Viewer) -> dict[str, Any]:
    links = Permalinks({(UUID(f.repo_id), f.repo_name) for f in result.files}, viewer)
    # A file found on a default branch by its definitions or its text alone carries no branch
    # name (the hybrid hits do): every file says the branch it was found on.
    unnamed = {UUID(f.repo_id) for f in result.files if not f.branch}
    default_branch = dict(Repository.objects.filter(pk__in=unnamed).values_list("pk", "branch"))
    files = []
    for rank, file in enumerate(result.files, start=1):
        repo_id = UUID(file.repo_id)
        functions = [
            {
                "symbol": fn.symbol,
                "kind": fn.kind,
                "start_line": fn.start_line,
                "end_line": fn.end_line,
                "score": fn.score,
                "reasons": fn.reasons,
                "url": links.blob(repo_id, file.commit, file.path, fn.start_line, fn.end_line),
            }
            for fn in file.functions
        ]
        first = file.functions[0] if file.functions else None
        files.append(
            {
                "rank": rank,
                "repo_id": file.repo_id,
                "repo_name": file.repo_name,
                "path": file.path,
                "commit": file.commit,
                "branch": file.branch or default_branch.get(repo_id, ""),
                "language": file.language,
                "score": file.score,
                "reasons": file.reasons,
                "url": links.blob(
                    repo_id,
                    file.commit,
                    file.path,
                    first.start_line if first else 0,
                    first.end_line if first else 0,
                ),
                "functions": functions,
            }
        )
    return {
        "files": files,
        "clues": result.clues.as_document(),
        "queries": result.queries,
        "trace": [
            {"name": s.name, "status": s.status, "reason": s.reason, "ms": s.ms, "detail": s.detail}
            for s in result.trace
        ],
        "ms": result.ms,
    }
