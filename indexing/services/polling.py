"""Keeping indexes fresh without anyone asking: check each remote's tip, re-index when it moved.

Every repository that was indexed once is checked every ``poll_interval`` seconds
(``Repository.poll_interval_secs``, else ``REPO_SEARCH_POLL_INTERVAL_SECS``; 0 = never). A check
reads the remote's ref advertisement only (``indexing.git.remote_refs``), so an unchanged remote
costs one small request and no pack. Only a tip that differs from the indexed commit queues a
re-index, through the same path as the Re-index button (``reindex_repository``: incremental,
coalesced with a running job). Push webhooks (``indexing.webhooks``) land in ``note_remote_tip``
too.

Spreading: the dispatcher (``claim_due_repositories``, driven by beat every
``REPO_SEARCH_POLL_TICK_SECS``) sends each due check with a random delay within the tick, and
each next check is scheduled ``interval`` ± 10 %, so hundreds of repositories do not all poll in
the same second. A failing remote backs off exponentially (2, 4, 8 times the interval, capped by
``REPO_SEARCH_POLL_MAX_BACKOFF_SECS``) and its error is kept on the repository (``poll_error``,
``next_poll_at``). A repository with a running job is never polled: its job is fetching anyway.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from indexing.git.errors import BranchNotFound, GitFetchError
from indexing.git.remote_refs import remote_heads, remote_tip
from indexing.models import FINISHED_JOB_STATES, IndexJob, Repository
from indexing.services.branch_freshness import BranchOutcome, no_reindex_reason, poll_branches
from indexing.services.repositories import active_job, reindex_repository

logger = logging.getLogger(__name__)

JITTER_FRACTION = 0.1
POLL_TIMEOUT_SECS = 30  # a ref advertisement is one small answer


@dataclass(frozen=True)
class PollOutcome:
    repository_id: UUID
    remote_tip: str = ""  # "" when the check failed or was skipped
    moved: bool = False  # the remote's tip differs from the indexed commit
    job_id: int | None = None  # the re-index queued (or the running one it was coalesced into)
    coalesced: bool = False
    reason: str = ""  # why nothing was queued, or the error
    branches: tuple[BranchOutcome, ...] = ()  # the other indexed branches' checks


def poll_interval(repository: Repository) -> int:
    """Seconds between checks of ``repository``'s remote; 0 = never checked."""
    if repository.poll_interval_secs is not None:
        return repository.poll_interval_secs
    return int(settings.REPO_SEARCH_POLL_INTERVAL_SECS)


def _jittered(seconds: float) -> timedelta:
    return timedelta(seconds=seconds * random.uniform(1 - JITTER_FRACTION, 1 + JITTER_FRACTION))


def backoff_seconds(interval: int, failures: int) -> float:
    """Delay before the next check after ``failures`` failed checks in a row."""
    cap = max(float(settings.REPO_SEARCH_POLL_MAX_BACKOFF_SECS), float(interval))
    return min(float(interval) * 2 ** min(failures, 30), cap)


def _has_running_job() -> Exists:
    return Exists(
        IndexJob.objects.filter(repository=OuterRef("pk")).exclude(state__in=FINISHED_JOB_STATES)
    )


def due_repositories(now: datetime | None = None) -> list[Repository]:
    """Repositories indexed once, with polling on, due now and without a running job."""
    now = now or timezone.now()
    enabled = Q(poll_interval_secs__gt=0)
    if settings.REPO_SEARCH_POLL_INTERVAL_SECS > 0:
        enabled |= Q(poll_interval_secs__isnull=True)
    return list(
        Repository.objects.filter(enabled, active_generation__gt=0)
        .filter(Q(next_poll_at__isnull=True) | Q(next_poll_at__lte=now))
        .exclude(_has_running_job())
        .order_by("next_poll_at")
    )


def claim_due_repositories(now: datetime | None = None) -> list[tuple[UUID, float]]:
    """Mark the due repositories as taken until their next interval (a lost check is simply
    made again then) and return each with a random delay within the tick to send it after."""
    now = now or timezone.now()
    claimed: list[tuple[UUID, float]] = []
    tick = float(settings.REPO_SEARCH_POLL_TICK_SECS)
    with transaction.atomic():
        for repository in due_repositories(now):
            interval = poll_interval(repository)
            taken = Repository.objects.filter(
                pk=repository.pk, next_poll_at=repository.next_poll_at
            )
            if taken.update(next_poll_at=now + _jittered(max(interval, POLL_TIMEOUT_SECS * 2))):
                spread = min(tick, float(interval))
                claimed.append((repository.pk, random.uniform(0, spread)))
    return claimed


def poll_repository(repository: Repository) -> PollOutcome:
    """Read the remote's tip of the indexed branch; queue a re-index when it moved."""
    interval = poll_interval(repository)
    now = timezone.now()
    if active_job(repository) is not None:
        Repository.objects.filter(pk=repository.pk).update(next_poll_at=now + _jittered(interval))
        return PollOutcome(repository.pk, reason="a job is running")
    options = {
        "timeout_s": min(POLL_TIMEOUT_SECS, float(settings.REPO_SEARCH_CLONE_TIMEOUT_SECS)),
        "allow_private_hosts": settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS,
        "allow_local_paths": settings.REPO_SEARCH_ALLOW_LOCAL_PATHS,
        "token": settings.REPO_SEARCH_GIT_TOKEN,
        "token_hosts": settings.REPO_SEARCH_GIT_TOKEN_HOSTS,
    }
    many = bool(repository.branch_specs) and bool(repository.branch)
    heads: dict[str, str] = {}
    try:
        if many:  # every branch's tip in one advertisement
            heads = remote_heads(repository.url, **options)  # type: ignore[arg-type]
            if repository.branch not in heads:
                raise BranchNotFound(f"branch {repository.branch!r} no longer exists on the remote")
            tip = heads[repository.branch]
        else:
            tip = remote_tip(repository.url, repository.branch or None, **options).commit_sha  # type: ignore[arg-type]
    except GitFetchError as error:
        return _record_failure(repository, error, interval, now)
    Repository.objects.filter(pk=repository.pk).update(
        last_polled_at=now,
        poll_error="",
        poll_failures=0,
        next_poll_at=now + _jittered(interval),
    )
    outcome = note_remote_tip(repository, tip, source="poll")
    if many:  # after the default branch's: theirs run after its job
        outcome = replace(outcome, branches=tuple(poll_branches(repository, heads)))
    return outcome


def _record_failure(
    repository: Repository, error: GitFetchError, interval: int, now: datetime
) -> PollOutcome:
    failures = repository.poll_failures + 1
    delay = backoff_seconds(interval, failures)
    message = error.message
    if isinstance(error, BranchNotFound):
        message = (
            f"{message}; the index of {repository.last_indexed_commit[:12]} is kept "
            "(delete the repository, or add the branch that replaced it)"
        )
    changes: dict[str, object] = {
        "last_polled_at": now,
        "poll_error": message,
        "poll_failures": failures,
        "next_poll_at": now + _jittered(delay),
    }
    if isinstance(error, BranchNotFound):
        changes["remote_tip"] = ""  # nothing to compare with: "behind" is unknown
    Repository.objects.filter(pk=repository.pk).update(**changes)
    logger.warning(
        "repository=%s poll failed (%d in a row, next in %.0f s): %s",
        repository.pk,
        failures,
        delay,
        message,
    )
    return PollOutcome(repository.pk, reason=message)


def note_remote_tip(repository: Repository, tip: str, *, source: str) -> PollOutcome:
    """Record ``tip`` as the remote's tip; queue a re-index when it is not the indexed commit."""
    previous_tip = repository.remote_tip
    Repository.objects.filter(pk=repository.pk).update(remote_tip=tip)
    repository.remote_tip = tip
    jobs = repository.jobs.all()
    skipped = no_reindex_reason(previous_tip, tip, repository.last_indexed_commit, jobs)
    if skipped is not None:
        moved, reason = skipped
        return PollOutcome(repository.pk, tip, moved=moved, reason=reason)
    job, created = reindex_repository(repository)
    if not created:
        # The running job may have fetched before this tip existed: check again as soon as it
        # ends (due_repositories skips a repository while its job runs).
        Repository.objects.filter(pk=repository.pk).update(next_poll_at=timezone.now())
    logger.info(
        "repository=%s remote tip %s (indexed %s) from %s: job=%s%s",
        repository.pk,
        tip[:12],
        repository.last_indexed_commit[:12],
        source,
        job.pk,
        "" if created else " (coalesced)",
    )
    return PollOutcome(repository.pk, tip, moved=True, job_id=job.pk, coalesced=not created)
