"""``make up`` restarts a process that dies instead of stopping everything, on a stack of this
module's own (``python -m reposearch.embedded_stack up`` in a temporary data directory):
the web server SIGKILLed comes back and the worker never noticed; the worker SIGKILLed comes
back and takes a queued job; Redis and PostgreSQL SIGKILLed come back; a second ``make up`` on
the same data directory is refused and leaves the first one running. (A child that keeps
crashing makes ``make up`` give up: tests/reposearch/test_supervisor.py.)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposearch.embedded_services import pid_alive
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo
from tests.make_up_stack import ROOT, SharedMakeUp, Stack

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def stack(shared_make_up: SharedMakeUp) -> Iterator[Stack]:
    """The ``make up`` shared with test_make_up.py's first-start checks (tests/reposearch/
    conftest.py; it allows private hosts: the test's git server is on 127.0.0.1); stopped here."""
    running = shared_make_up.get()
    yield running
    assert running.process.poll() is None, running.output()[-4000:]  # it never gave up
    shared_make_up.stop()


def _pid(stack: Stack, name: str) -> int:
    return int((stack.data / "run" / f"{name}.pid").read_text())


def test_a_killed_web_server_comes_back_and_the_worker_is_untouched(stack: Stack) -> None:
    web, worker = _pid(stack, "web"), _pid(stack, "worker")
    os.kill(web, signal.SIGKILL)

    stack.wait_for(lambda: _pid(stack, "web") != web, "a new web server", 30)
    stack.wait_for(stack.healthy, "health 200 again")
    assert re.search(r"web exited \(code -9, SIGKILL\); restarting it in 1 s", stack.output())
    assert _pid(stack, "worker") == worker and pid_alive(worker)  # the worker was left alone
    assert "worker exited" not in stack.output()


def test_a_killed_worker_comes_back_and_takes_a_queued_job(stack: Stack, tmp_path: Path) -> None:
    repo = init_bare_repo(str(tmp_path / "small.git"))
    commit_files(repo, {"src/app.py": "def greet(name):\n    return f'hello {name}'\n"})
    worker = _pid(stack, "worker")
    os.kill(worker, signal.SIGKILL)
    with GitHttpServer({"team/small.git": repo}) as server:
        created = stack.api("POST", "/api/repos", {"url": server.url("team/small.git")})
        stack.wait_for(lambda: _pid(stack, "worker") != worker, "a new worker", 30)
        job_id = created["job"]["id"]
        stack.wait_for(
            lambda: stack.api("GET", f"/api/jobs/{job_id}")["state"] in {"done", "failed"},
            "the queued job finishing",
            240,
        )
    job = stack.api("GET", f"/api/jobs/{job_id}")
    assert job["state"] == "done", job
    assert re.search(r"worker exited \(code -9, SIGKILL\); restarting it in 1 s", stack.output())
    assert not pid_alive(worker)


def test_a_killed_redis_comes_back(stack: Stack) -> None:
    pidfile = stack.data / "redis" / "redis.pid"
    redis = int(pidfile.read_text())
    os.kill(redis, signal.SIGKILL)

    def redis_back() -> bool:
        try:
            return int(pidfile.read_text()) != redis
        except (OSError, ValueError):
            return False

    stack.wait_for(redis_back, "a new Redis", 60)
    assert "Redis exited (code -9, SIGKILL); restarting it in 1 s" in stack.output()
    stack.wait_for(stack.healthy, "health 200 again")


def test_a_killed_postgresql_comes_back(stack: Stack) -> None:
    # A repository written before the kill (its git server need not answer: the row is what
    # must survive), so the test needs no other test to have run on this stack before it.
    kept = stack.api("POST", "/api/repos", {"url": "http://127.0.0.1:9/team/kept.git"})
    pidfile = stack.data / "postgres" / "postmaster.pid"
    postmaster = int(pidfile.read_text().splitlines()[0])
    os.kill(postmaster, signal.SIGKILL)

    def postgres_back() -> bool:
        try:
            pid = int(pidfile.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return False
        return pid != postmaster and pid_alive(pid)

    stack.wait_for(postgres_back, "a new PostgreSQL", 120)
    assert "PostgreSQL exited (code unknown); restarting it in 1 s" in stack.output()
    stack.wait_for(stack.healthy, "health 200 again")
    # What was written before is still there.
    assert kept["id"] in {r["id"] for r in stack.api("GET", "/api/repos")}


def test_a_second_make_up_on_the_same_data_directory_is_refused_and_the_first_runs_on(
    stack: Stack,
) -> None:
    """The README's "second terminal" is for commands; a second ``make up`` there used to stop
    the first one's processes as leftovers of a crash and take its Redis down with it."""
    web, worker = _pid(stack, "web"), _pid(stack, "worker")
    second = subprocess.run(
        [sys.executable, "-m", "reposearch.embedded_stack", "up"],
        cwd=ROOT, env=stack.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    said = second.stdout + second.stderr
    assert second.returncode == 1, said
    assert f"reposearch is already running from {stack.data} (pid {stack.process.pid})" in said
    assert "make down" in said
    assert "] stopping" not in said and "] starting" not in said, said
    assert _pid(stack, "web") == web and _pid(stack, "worker") == worker
    assert pid_alive(web) and pid_alive(worker) and stack.healthy()
