"""Celery tasks of the indexing pipeline, one module per queue (routes in settings)."""

from __future__ import annotations

from indexing.tasks import embed, git, index, maintenance, polling, repository_file

__all__ = ["embed", "git", "index", "maintenance", "polling", "repository_file"]
