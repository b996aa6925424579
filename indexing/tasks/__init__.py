"""Celery tasks of the indexing pipeline, one module per queue (routes in settings)."""

from __future__ import annotations

from indexing.tasks import embed, git, index, maintenance, polling

__all__ = ["embed", "git", "index", "maintenance", "polling"]
