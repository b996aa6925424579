"""Each kind of retry of a stage task counts apart (Celery's own ``retries`` counts them all).

The real task objects and Celery's ``Task.retry``, run eagerly (nothing reaches the broker): the
retried signature is what would be sent, so its arguments and countdown are what the worker gets.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from celery.exceptions import Retry
from django.db import OperationalError

from indexing.services.locks import LockBusy
from indexing.services.stages.run_context import TransientFailure
from indexing.tasks import retry_budget
from indexing.tasks.database_outage import DATABASE_RETRY_DELAYS_SECS, retry_after_database_outage
from indexing.tasks.git import fetch_repository

# A fetch that waited 7 times for a lock, failed twice and met 3 database outages: Celery has
# counted 12 retries of it.
COUNTS = {"transient_failures": 2, "lock_waits": 7, "database_waits": 3}


@pytest.fixture
def delivered() -> Iterator[Any]:
    fetch_repository.push_request(
        id="retry-budget-test",
        args=[41],
        kwargs=dict(COUNTS),
        retries=12,
        is_eager=True,
        called_directly=False,
    )
    yield fetch_repository
    fetch_repository.pop_request()


def test_a_database_outage_follows_its_own_schedule_whatever_else_was_retried(
    delivered: Any,
) -> None:
    with pytest.raises(Retry) as retried:
        retry_after_database_outage(delivered, 41, OperationalError("server closed"))
    assert retried.value.when == DATABASE_RETRY_DELAYS_SECS[3]  # the fourth outage, not the 13th
    assert tuple(retried.value.sig.args) == (41,)  # the job id stays where the census reads it
    assert retried.value.sig.kwargs == {**COUNTS, "database_waits": 4}


def test_a_transient_failure_backs_off_by_failures_only(delivered: Any, settings: Any) -> None:
    settings.REPO_SEARCH_FETCH_RETRY_DELAYS_SECS = [10, 30, 90, 270]
    delays = settings.REPO_SEARCH_FETCH_RETRY_DELAYS_SECS
    assert not retry_budget.is_final_attempt(delivered, delays)  # 2 of 4 retries used
    with pytest.raises(Retry) as retried:
        retry_budget.transient_retry(delivered, TransientFailure("503"), delays)
    assert retried.value.when == 90  # the third failure's wait, not the 13th retry's
    assert retried.value.sig.kwargs == {**COUNTS, "transient_failures": 3, "lock_wait_started": 0}


def test_the_last_database_outage_is_raised_not_retried(delivered: Any) -> None:
    delivered.request.kwargs = {**COUNTS, "database_waits": len(DATABASE_RETRY_DELAYS_SECS)}
    with pytest.raises(OperationalError, match="still down"):
        retry_after_database_outage(delivered, 41, OperationalError("still down"))


def test_a_lock_wait_retries_soon_and_keeps_when_the_wait_began(
    delivered: Any, settings: Any
) -> None:
    settings.REPO_SEARCH_LOCK_RETRY_SECS = 15
    settings.REPO_SEARCH_LOCK_WAIT_MAX_SECS = 1800
    began = time.time() - 600  # waiting for ten minutes, less than the bound
    delivered.request.kwargs = {**COUNTS, "lock_wait_started": began}
    with pytest.raises(Retry) as retried:
        retry_budget.lock_wait_retry(delivered, 41, "some-repository", LockBusy("busy"))
    assert retried.value.when == 15
    assert retried.value.sig.kwargs == {**COUNTS, "lock_waits": 8, "lock_wait_started": began}
