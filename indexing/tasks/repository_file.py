"""The beat task that reconciles ``REPO_SEARCH_REPOS_FILE`` when it changes (default queue)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="indexing.tasks.repository_file.check_repository_file", ignore_result=True)
def check_repository_file() -> str:
    """Apply the repository file if its modification time or content changed since last seen."""
    from indexing.repository_sets.reconcile import check_repository_file as check

    return check()
