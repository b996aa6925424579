"""Putting indexing work on the queues: the one module that enqueues the pipeline's tasks.

Each function sends its task once the current transaction commits (``transaction.on_commit``,
what Celery's ``delay_on_commit`` does), so a task never looks for a job row that is not there
yet; outside a transaction it is sent at once.
Tasks are sent by name (``indexing.task_names``), so this module, which the services call,
imports no task module (whose bodies call the services). Routing to the ``git`` / ``index`` /
``embed`` queues is in the settings (``CELERY_TASK_ROUTES``), which sending by name follows.
"""

from __future__ import annotations

import logging
import time
from functools import partial

from django.db import transaction

from indexing import task_names
from reposearch.celery import app

logger = logging.getLogger(__name__)


def enqueue_fetch(job_id: int) -> None:
    """Fetch the job's repository (then index and embed it)."""
    _send(task_names.FETCH, job_id, wait_for_broker=False)


# A stage's task handing its job over to the next stage must not lose it to a broker outage at
# that moment (the job would sit at the finished stage until the reaper). kombu's own publish
# retries give up within seconds when the connection is down, so the worker tries again itself,
# 1 s … 30 s apart for about ten minutes, until Redis is back.
HANDOVER_DELAYS_SECS = (1, 2, 4, 8, 15, *([30] * 18))


def _publish_waiting_for_broker(name: str, job_id: int) -> None:
    from kombu.exceptions import OperationalError

    for delay in (*HANDOVER_DELAYS_SECS, None):
        try:
            app.send_task(name, args=(job_id,))
            return
        except OperationalError as error:
            if delay is None:
                raise
            logger.warning(
                "job=%s broker unreachable, handing over to %s (%s); again in %s s",
                job_id, name, error, delay,
            )  # fmt: skip
            time.sleep(delay)


def _send(name: str, job_id: int, *, wait_for_broker: bool) -> None:
    if wait_for_broker:
        transaction.on_commit(partial(_publish_waiting_for_broker, name, job_id))
    else:
        transaction.on_commit(partial(app.send_task, name, args=(job_id,)))


def enqueue_index(job_id: int) -> None:
    """Walk, chunk and store the fetched commit (then embed it); sent by the fetch stage."""
    _send(task_names.INDEX, job_id, wait_for_broker=True)


def enqueue_embed(job_id: int, *, wait_for_broker: bool = False) -> None:
    """Embed the job's chunks that have no vector in the current embedding space.
    ``wait_for_broker``: the index stage's hand-over (see ``HANDOVER_DELAYS_SECS``)."""
    _send(task_names.EMBED, job_id, wait_for_broker=wait_for_broker)


def enqueue_poll(repository_id: object, countdown: float = 0.0) -> None:
    """Check the repository's remote for a new tip (``indexing.services.polling``)."""
    transaction.on_commit(
        partial(app.send_task, task_names.POLL, args=(str(repository_id),), countdown=countdown)
    )
