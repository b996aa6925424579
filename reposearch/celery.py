"""The Celery application: settings from Django's ``CELERY_`` namespace, tasks autodiscovered."""

from __future__ import annotations

from celery import Celery
from django.conf import settings
from kombu import Queue

from reposearch.startup import load_settings_or_exit

load_settings_or_exit()

app = Celery("reposearch")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name) for name in settings.CELERY_TASK_QUEUES_NAMES]
app.autodiscover_tasks()
