"""An idle worker does not keep the memory a job needed: the child that embedded is replaced.

The embedding model is loaded in the pool child that runs an embed task (some 120 MB of weights
plus activations); ``REPO_SEARCH_WORKER_MAX_MEMORY_MB`` (Celery's ``max_memory_per_child``)
replaces a child whose peak passed the cap once its task is done, so the worker goes back to
its start-up size while nothing is indexing.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest
from django.conf import settings

from indexing.models import IndexJob
from tests.accounts_support import token_client
from tests.indexing.git_server import commit_files, init_bare_repo

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SOURCE = "\n\n".join(
    f"def handler_{n}(request):\n    '''Handle request kind {n}.'''\n    return request.get({n})\n"
    for n in range(40)
)


def rss_mb(pid: int) -> float:
    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except psutil.NoSuchProcess:
        return float("inf")  # being replaced: look again


def test_the_child_that_embedded_gives_its_memory_back(
    celery_worker_process, tmp_path: Path
) -> None:
    before = set(celery_worker_process.pool_children())
    repo = init_bare_repo(str(tmp_path / "handlers.git"))
    commit_files(repo, {"app/handlers.py": SOURCE}, message="handlers")
    response = token_client().post(
        "/api/repos", {"url": str(tmp_path / "handlers.git")}, format="json"
    )
    assert response.status_code == 202, response.json()
    job_id = response.json()["job"]["id"]
    deadline = time.monotonic() + 240
    while not IndexJob.objects.get(pk=job_id).is_finished:
        assert time.monotonic() < deadline, IndexJob.objects.get(pk=job_id).state
        time.sleep(0.3)
    job = IndexJob.objects.get(pk=job_id)
    assert job.state == "done", (job.state, job.error)
    assert job.repository.embedded_count > 0  # the model ran in a pool child

    cap_mb = settings.REPO_SEARCH_WORKER_MAX_MEMORY_MB
    deadline = time.monotonic() + 30
    while True:  # the pool forks the replacement right after the task
        after = celery_worker_process.pool_children()
        sizes = {pid: rss_mb(pid) for pid in after}
        if set(after) != before and max(sizes.values()) < cap_mb:
            break
        assert time.monotonic() < deadline, (before, sizes, cap_mb)
        time.sleep(0.5)
