"""``make up`` restarts a process that dies instead of stopping everything, on a stack of this
module's own (``python -m reposearch.embedded_stack up`` in a temporary data directory):
the web server SIGKILLed comes back and the worker never noticed; the worker SIGKILLed comes
back and takes a queued job; Redis and PostgreSQL SIGKILLed come back; a web server that cannot start at all
(its port taken) makes ``make up`` give up after its retries, exit non-zero and say why.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposearch.embedded_services import free_port, pid_alive
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo
from tests.make_up_stack import SharedMakeUp, Stack, make_up, user_environment

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


def test_a_web_server_that_cannot_start_makes_make_up_give_up(tmp_path: Path) -> None:
    env = user_environment()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        env["REPO_SEARCH_BIND_ADDR"] = f"127.0.0.1:{taken.getsockname()[1]}"
        with make_up(tmp_path, env, ready=False) as running:
            try:
                code = running.process.wait(400)
            except subprocess.TimeoutExpired:
                pytest.fail(f"make up kept going:\n{running.output()[-4000:]}")
            output = running.output()
    assert code != 0, output[-4000:]
    delays = re.findall(r"web exited \(code \d+\); restarting it in (\d+) s", output)
    assert delays == ["1", "2", "4", "8"], output[-4000:]
    assert "it crashed 5 times in a row" in output
    assert "giving up and stopping everything" in output
    assert "address already in use" in output.lower()  # uvicorn's own reason, above ours
    assert "stopped" in output.splitlines()[-1]
