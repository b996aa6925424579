"""reposearch: the Django project (settings, URLs, the Celery app)."""

from __future__ import annotations

from reposearch.celery import app as celery_app

__all__ = ("celery_app",)
