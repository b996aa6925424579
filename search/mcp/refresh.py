"""The MCP tool ``refresh_repository``: queue a re-index, for callers with the ``write`` role.

It goes through ``indexing.services.repositories.reindex_repository`` (the Re-index button's
path: incremental, coalesced with a running job) and is recorded in the audit log as
``repository.reindex`` with ``via: mcp`` -- refused attempts too. A caller without the role
gets a tool error naming the role it needs; a repository it cannot see is "no repository".
"""

from __future__ import annotations

from typing import Any

from accounts import audit
from accounts.models import AuditOutcome
from accounts.roles import Role
from accounts.visibility import Viewer
from indexing.services.repositories import reindex_repository
from search.mcp.identity import Caller, current_caller
from search.mcp.tools import ToolInputError, resolve_repository


def _record(caller: Caller, target: str, outcome: str, details: dict[str, Any]) -> None:
    audit.record(
        "repository.reindex",
        user=caller.user,
        token=caller.token,
        address=caller.address,
        target=target,
        outcome=outcome,
        details={"via": "mcp", **details},
    )


def refresh_repository(repo: str, *, viewer: Viewer = Viewer()) -> dict[str, Any]:  # noqa: B008
    """Queue an incremental re-index of ``repo`` (coalesced into a running one)."""
    caller = current_caller()
    if caller.role is None or caller.role < Role.WRITE:
        held = caller.role.label if caller.role is not None else "none (no account)"
        _record(caller, str(repo)[:300], AuditOutcome.REFUSED, {"error": "permission_denied"})
        raise ToolInputError(
            "permission_denied",
            f"refresh_repository needs the write role; this caller's role is {held}",
            "an API token with scope write (or admin) of an account holding that role "
            "(over stdio: manage.py mcp --user NAME of such an account)",
        )
    repository = resolve_repository(repo, viewer)
    job, created = reindex_repository(repository)
    _record(caller, str(repository.pk), AuditOutcome.OK, {"job": job.pk, "coalesced": not created})
    return {
        "id": str(repository.pk),
        "name": repository.name,
        "job": {"id": job.pk, "kind": job.kind, "state": job.state},
        "coalesced": not created,
        "commit": repository.last_indexed_commit,
        "indexed_at": repository.last_indexed_at.isoformat()
        if repository.last_indexed_at
        else None,
    }
