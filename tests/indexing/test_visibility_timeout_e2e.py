"""A task that runs longer than the broker's visibility timeout is delivered a second time while
it still runs (tests/settings_short_visibility.py: 3 s). The second delivery must not run the
stage at once beside the first: the repository lock belongs to one run, so it waits (retries),
and when it gets its turn the stage is over and it ends without touching the job."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fault_stack import FaultStack
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[FaultStack]:
    running = FaultStack(tmp_path / "stack")
    running.env["DJANGO_SETTINGS_MODULE"] = "tests.settings_short_visibility"
    try:
        running.start()
        yield running
    finally:
        running.stop()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[GitHttpServer]:
    repo = init_bare_repo(str(tmp_path / "slow.git"))
    files = {
        f"pkg/module_{n}.py": f"def function_{n}(value):\n    return value * {n} - 7\n\n\n"
        f"class Model{n}:\n    def method(self):\n        return function_{n}(7)\n"
        for n in range(300)
    }
    commit_files(repo, files, message="enough to embed for longer than 3 s")  # type: ignore[arg-type]
    with GitHttpServer({"team/slow.git": repo}) as server:
        yield server


def test_a_task_outliving_the_visibility_timeout_never_runs_twice_at_once(
    stack: FaultStack, served: GitHttpServer
) -> None:
    job = stack.wait_until_finished(stack.add_repository(served.url("team/slow.git")), 400)
    assert job["state"] == "done", (job["state"], job["error"])
    log = stack.log_tail(2_000_000)
    embed_task = job["celery_task_id"]
    deliveries = len(re.findall(rf"embed_repository\[{embed_task}\] received", log))
    assert deliveries >= 2, "the broker did not deliver the long task again; nothing was tested"
    # The second delivery found the stage's lock held by the running one and waited.
    assert re.search(
        rf"embed_repository\[{embed_task}\] retry: .*being indexed by another run", log
    )
    assert "index stage restarts" not in log and job["resumes"] == 0
    [(chunks, vectors, distinct, generations)] = stack.query(
        "SELECT r.chunk_count,"
        " (SELECT count(*) FROM indexing_chunkembedding e WHERE e.repository_id = r.id),"
        " (SELECT count(DISTINCT chunk_id) FROM indexing_chunkembedding e"
        "  WHERE e.repository_id = r.id),"
        " (SELECT count(DISTINCT generation) FROM indexing_chunk c WHERE c.repository_id = r.id)"
        " FROM indexing_repository r WHERE r.id = %s",
        job["repository_id"],
    )
    assert chunks == vectors == distinct > 0 and generations == 1
