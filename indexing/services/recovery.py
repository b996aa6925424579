"""Which unfinished jobs still have a task somewhere, and resuming the ones that lost theirs.

A job's stage runs as a Celery task. That task is either *running* (in a live worker's active
list), *waiting* (prefetched or scheduled by a live worker, or still in a queue in the broker),
or nowhere: its worker was killed with it, or the broker lost it in a restart. Only the last
kind is orphaned; the reaper and the worker's start-up sweep resume those (the stage's task is
sent again: every stage converges when re-run) up to ``MAX_RESUMES`` times, then fail them.
A job whose task is running but silent is hung; a job that is merely waiting behind others
is neither, however old its heartbeat.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from indexing import task_names
from indexing.models import FINISHED_JOB_STATES, IndexJob, JobKind, JobState
from reposearch.celery import app

logger = logging.getLogger(__name__)

STAGE_TASKS = {task_names.FETCH, task_names.INDEX, task_names.EMBED}
MAX_RESUMES = 3
PRIORITY_SEPARATOR = "\x06\x16"  # kombu's Redis transport: "<queue><sep><priority>" lists


@dataclass
class TaskCensus:
    """Job ids whose stage task is running in a live worker, or waiting for one."""

    running: set[int] = field(default_factory=set)
    waiting: set[int] = field(default_factory=set)

    def holds(self, job_id: int) -> bool:
        return job_id in self.running or job_id in self.waiting


def _job_id_of(name: Any, args: Any) -> int | None:
    if name not in STAGE_TASKS or not isinstance(args, list | tuple) or not args:
        return None
    return args[0] if isinstance(args[0], int) else None


def _from_worker_lists(answer: Any) -> Iterable[int]:
    for tasks in (answer or {}).values():
        for task in tasks:
            request = task.get("request", task)  # scheduled() wraps the request
            job_id = _job_id_of(request.get("name") or request.get("type"), request.get("args"))
            if job_id is not None:
                yield job_id


def _queued_in_broker(queues: Iterable[str]) -> set[int]:
    """Job ids of stage tasks still in the broker's queue lists (not yet taken by a worker)."""
    import redis

    found: set[int] = set()
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2.0)
    try:
        for queue in queues:
            for key in [queue, *(f"{queue}{PRIORITY_SEPARATOR}{p}" for p in (3, 6, 9))]:
                for raw in client.lrange(key, 0, -1):
                    job_id = _job_id_in_message(raw)
                    if job_id is not None:
                        found.add(job_id)
    finally:
        client.close()
    return found


def _job_id_in_message(raw: bytes | str) -> int | None:
    try:
        message = json.loads(raw)
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return _job_id_of(message.get("headers", {}).get("task"), args)
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def census(timeout: float = 1.0) -> TaskCensus | None:
    """Where every stage task is; None when no worker answers (then nothing can be judged)."""
    try:
        inspector = app.control.inspect(timeout=timeout)
        active = inspector.active()
        if not active:
            return None
        waiting_lists = [inspector.reserved(), inspector.scheduled()]
        queued = _queued_in_broker(settings.CELERY_TASK_QUEUES_NAMES)
    except Exception:  # the broker is down: nothing can be said about tasks
        logger.warning("could not take the task census", exc_info=True)
        return None
    result = TaskCensus(running=set(_from_worker_lists(active)))
    for answer in waiting_lists:
        result.waiting.update(_from_worker_lists(answer))
    result.waiting |= queued
    return result


@dataclass
class RecoveryReport:
    resumed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)  # hung, or lost too many times
    waiting: list[int] = field(default_factory=list)  # old heartbeat, but its task is queued
    judged: bool = True  # False: no worker answered, so nothing was decided


def silent_jobs(quiet_for: timedelta) -> list[IndexJob]:
    """Unfinished jobs with no heartbeat (or, never started, no creation) for ``quiet_for``."""
    cutoff = timezone.now() - quiet_for
    return list(
        IndexJob.objects.exclude(state__in=FINISHED_JOB_STATES)
        .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff))
        .order_by("pk")
    )


def recover(quiet_for: timedelta, *, hung_after: timedelta | None = None) -> RecoveryReport:
    """Decide about every job silent for ``quiet_for``: resume it when its task was lost (then
    fail it after ``MAX_RESUMES``), fail it when its task runs but has been silent for
    ``hung_after`` (default: ``quiet_for``), leave it when its task is waiting for a worker."""
    from indexing.services.jobs import reap_stale_jobs

    hung_after = hung_after or quiet_for
    report = RecoveryReport()
    silent = silent_jobs(quiet_for)
    if not silent:
        return report
    tasks = census()
    if tasks is None:
        report.judged = False
        return report
    hung_cutoff = timezone.now() - hung_after
    for job in silent:
        if job.pk in tasks.waiting:
            report.waiting.append(job.pk)
        elif job.pk in tasks.running:
            if job.heartbeat_at is not None and job.heartbeat_at < hung_cutoff:
                report.failed += reap_stale_jobs(hung_after, only=[job.pk])
        elif job.resumes < MAX_RESUMES:
            resume(job)
            report.resumed.append(job.pk)
        else:
            report.failed += reap_stale_jobs(
                timedelta(0),
                only=[job.pk],
                message=f"its task was lost {job.resumes + 1} times (workers stopped or the "
                "broker restarted); job abandoned",
            )
    return report


def resume(job: IndexJob) -> str:
    """Send the task of the stage ``job`` is in again; returns the task's name."""
    from indexing.services.locks import break_repository_lock

    if job.state == JobState.EMBEDDING or (
        job.state == JobState.QUEUED and job.kind == JobKind.REEMBED
    ):
        task = task_names.EMBED
    elif job.state in (JobState.WALKING, JobState.CHUNKING, JobState.STORING) and job.commit:
        task = task_names.INDEX  # restarts the walk; an unfinished generation is discarded
    else:
        task = task_names.FETCH  # queued, cloning, or an index stage without a fetched commit
    resumes = job.resumes + 1
    IndexJob.objects.filter(pk=job.pk).update(resumes=resumes)
    break_repository_lock(job.repository_id)  # held by the lost run, if by anyone
    app.send_task(task, args=(job.pk,))
    logger.warning(
        "job=%s repository=%s resumed in %s (resume %s): its task was lost",
        job.pk,
        job.repository_id,
        task,
        resumes,
    )
    return task
