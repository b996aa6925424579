"""The clone deadline covers the whole job, across its retries.

``REPO_SEARCH_CLONE_TIMEOUT_SECS`` bounds the time a job spends fetching, all attempts together:
each attempt gets what the earlier ones left (their time is added to the job's ``cloning``
stage timing when they fail), so a server that drips bytes or drops the connection just before
the deadline cannot hold a worker for five attempts of the full timeout each. The waits between
attempts hold no worker and are not counted.
"""

from __future__ import annotations

from django.conf import settings

from indexing.git.errors import FetchTimeout, GitFetchError
from indexing.models import IndexJob
from indexing.services.stages.run_context import record_timing

MIN_ATTEMPT_SECS = 1.0  # less than this left: do not start another attempt


def limit_secs() -> float:
    return float(settings.REPO_SEARCH_CLONE_TIMEOUT_SECS)


def spent_secs(job: IndexJob) -> float:
    return float(job.stage_timings.get("cloning", 0.0))


def seconds_left(job: IndexJob) -> float:
    return limit_secs() - spent_secs(job)


def exhausted_message(job: IndexJob) -> str:
    return (
        f"clone timed out: {spent_secs(job):.0f} s spent fetching over {job.attempts} attempts, "
        f"past the {limit_secs():g} s limit (REPO_SEARCH_CLONE_TIMEOUT_SECS)"
    )


def charge_failed_attempt(job: IndexJob, started: float) -> IndexJob:
    """Add a failed attempt's fetching time to the job's ``cloning`` timing; return the job."""
    job.stage_timings = record_timing(job, "cloning", started)
    IndexJob.objects.filter(pk=job.pk).update(stage_timings=job.stage_timings)
    return job


def failure_message(error: GitFetchError, job: IndexJob, final_attempt: bool) -> str:
    """The error's message, saying so when the deadline ran out over several attempts."""
    if isinstance(error, FetchTimeout) and job.attempts > 1:
        return exhausted_message(job)
    if error.transient and not final_attempt:  # retryable, but no time is left for it
        return f"{exhausted_message(job)}; last error: {error.message}"
    return error.message


def may_retry(error: GitFetchError, job: IndexJob, final_attempt: bool) -> bool:
    return error.transient and not final_attempt and seconds_left(job) >= MIN_ATTEMPT_SECS
