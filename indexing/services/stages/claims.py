"""A stage run's claim on its job: writes of a run that another run has taken over are refused.

A worker host cut off from the network mid-store keeps its task; the reaper finds the job's task
nowhere and resumes it on another host, which starts the index stage over. When the first host's
link comes back, its half-done run must not write one more row or swap its generation in. Every
transition sets the job's ``stage_started_at`` under the row lock (a restart of the walk too), so
a run that remembers the value its own last transition wrote can tell, under the same lock,
whether the job is still its own: the Redis repository lock belongs to the job and expires, this
fence does not.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from indexing.models import FINISHED_JOB_STATES, IndexJob, JobState
from indexing.services import jobs
from indexing.services.stages.run_context import JobCancelled

logger = logging.getLogger(__name__)


@dataclass
class StageClaim:
    job_id: int
    started_at: datetime | None

    @classmethod
    def of(cls, job: IndexJob) -> StageClaim:
        """The claim of the run that has just moved ``job`` (its own transition)."""
        return cls(job.pk, job.stage_started_at)

    def check(self) -> None:
        """Inside a transaction: lock the job row; raise ``JobCancelled`` when the job has ended
        or another run has moved it since this run's last transition."""
        row = (
            IndexJob.objects.select_for_update()
            .filter(pk=self.job_id)
            .values_list("state", "stage_started_at")
            .first()
        )
        if row is None or row[0] in FINISHED_JOB_STATES:
            raise JobCancelled(f"job {self.job_id} is {row[0] if row else 'gone'}; the stage stops")
        if row[1] != self.started_at:
            raise JobCancelled(
                f"job {self.job_id} was taken over by another run (state {row[0]}); this run stops"
            )

    def stop_if_lost(self, error: BaseException) -> None:
        """Raise ``JobCancelled`` (from ``error``) when this run no longer holds its claim: an
        error a superseded run meets (its staging directory removed, its connection reset) is
        not its to report, and it must not retry or fail a job that is another run's now."""
        try:
            with transaction.atomic():
                self.check()
        except JobCancelled as lost:
            raise lost from error

    def advance(self, job: IndexJob, state: str, **fields: Any) -> IndexJob:
        """Move the job on only while it is still this run's; remember the new claim."""
        with transaction.atomic():
            self.check()
            job = jobs.transition(job, state, **fields)
        self.started_at = job.stage_started_at
        return job


_PAST_FETCH = {JobState.WALKING, JobState.CHUNKING, JobState.STORING, JobState.EMBEDDING}


def delivered_late(job: IndexJob, stage: str) -> bool:
    """A stage task that reaches a job already past its stage: a second delivery of the task
    (the broker's visibility timeout passed while the first ran) that waited for the lock while
    the first delivery finished the stage. It must do nothing: re-running would restart the job
    or fail it for being in the wrong state."""
    if stage == "fetch":
        return job.state in _PAST_FETCH and bool(job.commit)
    if stage == "index":
        return job.state == JobState.EMBEDDING
    return False


def drop_late_delivery(job: IndexJob, stage: str) -> bool:
    """Log and say True when ``job`` is past ``stage`` (see ``delivered_late``)."""
    if not delivered_late(job, stage):
        return False
    logger.info("job=%s is %s: a late %s delivery is dropped", job.pk, job.state, stage)
    return True
