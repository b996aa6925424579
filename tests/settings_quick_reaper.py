"""Test settings for a ``celery beat`` that sends the reaper (``reap_stale_jobs``) every 10 s
instead of every 60: a job whose worker host died is judged as soon as it has been silent for
``REPO_SEARCH_JOB_STALE_SECS``, not up to a minute later (tests/netns_lab.py's beat)."""

from __future__ import annotations

from reposearch.settings.test import *  # noqa: F403
from reposearch.settings.test import CELERY_BEAT_SCHEDULE

CELERY_BEAT_SCHEDULE = {
    **CELERY_BEAT_SCHEDULE,
    "reap-stale-jobs": {**CELERY_BEAT_SCHEDULE["reap-stale-jobs"], "schedule": 10.0},
}
