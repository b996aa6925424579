"""Test settings with a broker visibility timeout of 3 s, swept every second: a task that runs
longer is handed to a second worker process while the first still runs it (what happens in
production to a task that outlives ``visibility_timeout``)."""

from __future__ import annotations

from reposearch.settings.test import *  # noqa: F403

CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 3,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
