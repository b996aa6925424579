"""Stage tasks treat a database outage as transient: the task is retried with backoff.

A PostgreSQL restart or a network blip between a worker host and the database raises
``OperationalError`` / ``InterfaceError`` in whatever the stage was doing. Every stage converges
when re-run (it reloads its job and continues or starts the stage over), so the task is sent
again after ``DATABASE_RETRY_DELAYS_SECS``, for about ten minutes in all, instead of failing
and leaving its job at the same stage until the reaper. Outages are counted apart from the
stage's transient failures and lock waits (``retry_budget``).
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from django.db import InterfaceError, OperationalError, connections

from indexing.tasks import retry_budget

logger = logging.getLogger(__name__)

DATABASE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
DATABASE_RETRY_DELAYS_SECS = (2, 5, 10, 20, 30, 60, 60, 60, 120, 240)


def retry_after_database_outage(task: Any, job_id: int, error: Exception) -> NoReturn:
    """Drop the broken connections and send the task again later (``task`` is a bound task)."""
    connections.close_all()
    attempt = retry_budget.count(task, retry_budget.DATABASE)  # outages only, not other retries
    if attempt >= len(DATABASE_RETRY_DELAYS_SECS):
        raise error
    delay = DATABASE_RETRY_DELAYS_SECS[attempt]
    logger.warning(
        "job=%s task=%s waiting for the database (%s); retry in %s s",
        job_id,
        task.name,
        type(error).__name__,
        delay,
    )
    raise retry_budget.database_retry(task, error, DATABASE_RETRY_DELAYS_SECS)
