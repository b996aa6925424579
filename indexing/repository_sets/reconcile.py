"""Applying a repository file: one transaction under one lock, an audit row per change.

``sync_repository_file`` takes a PostgreSQL advisory lock for its whole transaction, then reads
the file, plans and applies: two reconciles (``make up``'s, the beat check's, an operator's
``sync_repos``) never interleave, and the second one reads the file as it is once the first has
committed. Adds and updates go through ``indexing.services.repositories`` (the API's path);
their index jobs are queued when the transaction commits. Removals (``prune: true``) run after
the commit, each through ``delete_repository`` (it cancels a running job and waits for its lock,
which a job could not give up while the transaction hid the cancellation).

``check_repository_file`` is the beat task's body: it reconciles ``REPO_SEARCH_REPOS_FILE``
when its modification time, size or SHA-256 differ from what was last seen
(``RepositoryFileState``). It says nothing when no file is set, and logs a file it cannot read
or apply once, not at every check.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts import audit
from accounts.models import AuditOutcome
from indexing.exceptions import RepositoryCheckUnavailable, RepositoryRefused
from indexing.models import Repository, RepositoryFileState
from indexing.repository_sets.loading import Problem, RepositoryFileInvalid, read_repository_file
from indexing.repository_sets.planning import Change, Plan, plan_repository_file
from indexing.services.repositories import add_repository, delete_repository, update_repository

logger = logging.getLogger(__name__)
LOCK_KEY = "reposearch:repository_file"


@dataclass(frozen=True)
class SyncResult:
    plan: Plan
    applied: bool


def sync_repository_file(path: str | Path, *, dry_run: bool = False) -> SyncResult:
    """Read, check and (unless ``dry_run``) apply the file; ``RepositoryFileInvalid`` changes
    nothing."""
    shown = str(path)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [LOCK_KEY])
        # Seen before the read: an edit from now on changes it, so the beat check sees the edit.
        signature = _signature_or_none(shown)
        repository_file = read_repository_file(path)
        plan = plan_repository_file(repository_file)
        if dry_run:
            return SyncResult(plan, applied=False)
        for change in plan.changes:
            try:
                if change.kind == "add":
                    _add(shown, change)
                elif change.kind == "update":
                    _update(shown, change)
            except RepositoryRefused as refusal:  # e.g. a URL that stopped resolving meanwhile
                problem = Problem(change.line or 0, f"{change.url}: {refusal.message}")
                raise RepositoryFileInvalid(
                    shown, [problem], transient=isinstance(refusal, RepositoryCheckUnavailable)
                ) from None
            if change.kind == "remove":
                transaction.on_commit(partial(_remove, shown, change))
        _remember(shown, repository_file.sha256, error="", signature=signature)
    logger.info("repository file %s applied: %s", shown, plan.summary)
    return SyncResult(plan, applied=True)


def _add(path: str, change: Change) -> None:
    job = add_repository(
        change.url,
        branch=change.branch or None,
        name=change.name,
        contextual_summaries=bool(change.settings.get("contextual_summaries", False)),
        visibility_groups=change.settings.get("visibility_groups") or None,
        poll_interval_secs=change.settings.get("poll_interval_secs"),
        managed_by_file=True,
        branches=change.settings.get("branches") or None,
    )
    change.repository_id = job.repository_id
    audit.record(
        "repos_file.add",
        target=str(job.repository_id),
        details={"file": path, "line": change.line, "url": change.url, "branch": change.branch,
                 "name": change.name, "job": job.pk},
    )  # fmt: skip


def _update(path: str, change: Change) -> None:
    repository = Repository.objects.get(pk=str(change.repository_id))
    update_repository(repository, **{key: new for key, (_old, new) in change.changes.items()})
    audit.record(
        "repos_file.update",
        target=str(repository.pk),
        details={"file": path, "line": change.line, "url": change.url,
                 "changes": {key: [old, new] for key, (old, new) in change.changes.items()}},
    )  # fmt: skip


def _remove(path: str, change: Change) -> None:
    details = {"file": path, "line": None, "url": change.url, "name": change.name}
    repository = Repository.objects.filter(
        pk=str(change.repository_id), managed_by_file=True
    ).first()
    if repository is None:
        return  # deleted meanwhile
    try:
        delete_repository(repository)
    except Exception as error:  # logged and audited; the other removals still run
        logger.exception("repository file %s: could not remove %s", path, change.repository_id)
        audit.record(
            "repos_file.remove",
            target=str(change.repository_id),
            outcome=AuditOutcome.FAILED,
            details={**details, "error": str(error)[:300]},
        )
        return
    audit.record("repos_file.remove", target=str(change.repository_id), details=details)


def _file_signature(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_mtime_ns, stat.st_size


def _signature_or_none(path: str) -> tuple[int, int]:
    try:
        return _file_signature(path)
    except OSError:
        return 0, 0


def _remember(
    path: str, sha256: str, *, error: str, signature: tuple[int, int] | None = None
) -> None:
    mtime_ns, size = signature or _signature_or_none(path)
    now = timezone.now()
    values = {"mtime_ns": mtime_ns, "size": size, "sha256": sha256, "checked_at": now,
              "error": error[:10_000]}  # fmt: skip
    if not error:
        values["applied_at"] = now
    RepositoryFileState.objects.update_or_create(path=path, defaults=values)


def record_refusal(path: str, refusal: RepositoryFileInvalid) -> None:
    """Remember why this version of the file was not applied (not retried until it changes,
    unless the reason was a lookup that failed just now)."""
    signature = _signature_or_none(path)
    try:
        sha256 = "" if refusal.transient else hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        sha256 = ""
    _remember(path, sha256, error=str(refusal), signature=signature)


def check_repository_file() -> str:
    """Reconcile ``REPO_SEARCH_REPOS_FILE`` if it changed since last seen; returns what it did."""
    path = settings.REPO_SEARCH_REPOS_FILE
    if not path:
        return "off"
    state = RepositoryFileState.objects.filter(path=path).first()
    try:
        mtime_ns, size = _file_signature(path)
        if state is not None and state.sha256 and (state.mtime_ns, state.size) == (mtime_ns, size):
            return "unchanged"
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as error:
        refusal = RepositoryFileInvalid(path, [Problem(0, f"cannot read it: {error.strerror}")])
        # Said once per reason (kept as the state's error), not at every check while it lasts.
        if state is None or state.error != str(refusal):
            logger.warning("repository file not applied: %s", refusal)
            record_refusal(path, refusal)
        return "unreadable"
    if state is not None and state.sha256 == digest:
        RepositoryFileState.objects.filter(pk=state.pk).update(mtime_ns=mtime_ns, size=size)
        return "unchanged"
    try:
        result = sync_repository_file(path)
    except RepositoryFileInvalid as refusal:
        logger.error("repository file not applied:\n%s", refusal)
        record_refusal(path, refusal)
        return "invalid"
    return f"applied: {result.plan.summary}"
