"""Where a repository's bare clone lives: ``<REPO_SEARCH_DATA_DIR>/repos/<repository id>``."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def repository_dir(repository_id: object) -> Path:
    """The directory of the repository's clone (it may not exist yet, or any more)."""
    return Path(settings.REPO_SEARCH_DATA_DIR) / "repos" / str(repository_id)
