"""Celery tasks of the indexing pipeline, one module per queue (routes in settings)."""

from __future__ import annotations

from indexing.tasks import maintenance

__all__ = ["maintenance"]
