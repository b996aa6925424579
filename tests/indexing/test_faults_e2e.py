"""Faults on a stack of this module's own (tests/fault_stack.py): the database restarted while a
job embeds, and the broker stopped while a job runs. After each, the job ends done with every
vector once, and the worker is still there. Each test indexes repositories of its own contents
(no embed stage can borrow another's vectors and finish before the fault)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fault_stack import FaultStack, fault_stack
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo

pytestmark = pytest.mark.e2e


def _modules(count: int, salt: str) -> dict[str, object]:
    return {
        f"pkg/module_{n}.py": f"def function_{n}(value):\n    return value * {n}  # {salt}\n\n\n"
        f"class Model{n}:\n    def method(self):\n        return function_{n}(1)\n"
        for n in range(count)
    }


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultStack]:
    with fault_stack(tmp_path_factory.mktemp("stack")) as running:
        yield running


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[GitHttpServer]:
    salt = request.node.name  # contents of this test's own
    repo = init_bare_repo(str(tmp_path / "demo.git"))
    commit_files(repo, _modules(120, salt), message="many modules")
    small = init_bare_repo(str(tmp_path / "small.git"))
    commit_files(small, _modules(2, salt), message="two modules")
    with GitHttpServer({"team/demo.git": repo, "team/small.git": small}) as server:
        yield server


def _assert_complete(stack: FaultStack, job: dict) -> None:  # type: ignore[type-arg]
    assert job["state"] == "done", (job["state"], job["error"], stack.log_tail())
    [(chunks, live, vectors, distinct)] = stack.query(
        "SELECT r.chunk_count,"
        " (SELECT count(*) FROM indexing_chunk c WHERE c.repository_id = r.id),"
        " (SELECT count(*) FROM indexing_chunkembedding e WHERE e.repository_id = r.id),"
        " (SELECT count(DISTINCT chunk_id) FROM indexing_chunkembedding e"
        "  WHERE e.repository_id = r.id)"
        " FROM indexing_repository r WHERE r.id = %s",
        job["repository_id"],
    )
    assert chunks == live == vectors == distinct > 0  # nothing missing, nothing doubled


def _log_since(stack: FaultStack, offset: int) -> str:
    """What the worker logged since ``offset`` (the log's size when the test began)."""
    return stack.log_path.read_bytes()[offset:].decode(errors="replace")


def test_the_database_restarted_mid_embed_delays_the_job_but_loses_nothing(
    stack: FaultStack, served: GitHttpServer
) -> None:
    offset = stack.log_path.stat().st_size
    job_id = stack.add_repository(served.url("team/demo.git"))
    stack.wait_for(job_id, lambda j: j["state"] == "embedding" and j["chunks_embedded"], 240)

    stack.postgres.stop()
    time.sleep(8)  # an outage, not a blip: the stage's next statements fail
    stack.postgres.start()

    job = stack.wait_until_finished(job_id)
    _assert_complete(stack, job)
    assert job["resumes"] == 0  # retried by its own task, not found lost
    assert stack.worker_alive()
    assert "waiting for the database" in _log_since(stack, offset)  # this test's outage


def test_the_broker_stopped_while_a_job_runs_leaves_a_live_worker_and_a_done_job(
    stack: FaultStack, served: GitHttpServer
) -> None:
    job_id = stack.add_repository(served.url("team/demo.git"))
    stack.wait_for(job_id, lambda j: j["state"] == "embedding" and j["chunks_embedded"], 240)

    stack.redis.stop()
    time.sleep(8)
    stack.redis.start()

    job = stack.wait_until_finished(job_id)
    _assert_complete(stack, job)
    assert stack.worker_alive(), stack.log_tail()
    assert "Unrecoverable error" not in stack.log_path.read_text(errors="replace")
    # and it still takes new work
    second = stack.add_repository(served.url("team/small.git"))
    _assert_complete(stack, stack.wait_until_finished(second))
