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
from accounts.roles import Role, role_of
from accounts.visibility import Viewer
from indexing.models import IndexedBranch, Repository
from indexing.services.branches import reindex_branch
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


def refresh_repository(
    repo: str,
    branch: str | None = None,
    *,
    viewer: Viewer = Viewer(),  # noqa: B008 - frozen, never mutated
) -> dict[str, Any]:
    """Queue an incremental re-index of ``repo``'s default branch, or of one of its other
    indexed ``branch``es (coalesced into a running job; queued after one of another branch)."""
    caller = current_caller()
    if caller.role is None or caller.role < Role.WRITE:
        _record(caller, str(repo)[:300], AuditOutcome.REFUSED, {"error": "permission_denied"})
        raise ToolInputError(
            "permission_denied",
            f"refresh_repository needs the write role; {_what_is_held(caller)}",
            "an API token with scope write (or admin) of an account holding that role "
            "(over stdio: manage.py mcp --user NAME of such an account)",
        )
    repository = resolve_repository(repo, viewer)
    other = _other_branch(repository, branch)
    if other is None:
        job, created = reindex_repository(repository)
        commit, indexed_at = repository.last_indexed_commit, repository.last_indexed_at
    else:
        found, created = reindex_branch(repository, other)
        commit, indexed_at = other.last_indexed_commit, other.last_indexed_at
        if found is None:  # the default branch's first index comes first; then this one
            _record(caller, str(repository.pk), AuditOutcome.OK, {"branch": other.name})
            return {
                "id": str(repository.pk),
                "name": repository.name,
                "branch": other.name,
                "job": None,
                "pending": True,
                "coalesced": False,
                "commit": commit,
                "indexed_at": None,
            }
        job = found
    details: dict[str, Any] = {"job": job.pk, "coalesced": not created}
    if other is not None:
        details["branch"] = other.name
    _record(caller, str(repository.pk), AuditOutcome.OK, details)
    return {
        "id": str(repository.pk),
        "name": repository.name,
        "branch": repository.branch if other is None else other.name,
        "job": {"id": job.pk, "kind": job.kind, "state": job.state},
        # another branch's job runs: this re-index is queued after it
        "pending": not created and job.branch_id != (None if other is None else other.pk),
        "coalesced": not created,
        "commit": commit,
        "indexed_at": indexed_at.isoformat() if indexed_at else None,
    }


def _other_branch(repository: Repository, branch: str | None) -> IndexedBranch | None:
    """The indexed branch named ``branch`` other than the default one (None: the default)."""
    if branch is None or not str(branch).strip() or str(branch).strip() == repository.branch:
        return None
    name = str(branch).strip()
    found = repository.indexed_branches.filter(name=name).first()
    if found is None:
        names = [repository.branch, *repository.indexed_branches.values_list("name", flat=True)]
        listed = ", ".join(repr(n) for n in sorted({n for n in names if n})) or "none"
        raise ToolInputError(
            "unknown_branch",
            f"{repository.name} has no indexed branch {name!r}",
            f"one of its indexed branches: {listed} (repository_status lists them)",
        )
    return found


def _what_is_held(caller: Caller) -> str:
    """Why the caller's role falls short: the token's scope when its account holds more (an
    administrator's read token), else the account's role."""
    if caller.role is None:
        return "this caller's role is none (no account)"
    account = role_of(caller.user) if caller.user is not None else None
    if caller.token is not None and account is not None and account > caller.role:
        return (
            f"this token's scope is {caller.token.scope} (its account holds {account.label}):"
            " use a token with scope write or admin"
        )
    return f"this caller's role is {caller.role.label}"
