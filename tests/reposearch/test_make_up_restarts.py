"""``make up`` restarts a process that dies instead of stopping everything, on a stack of this
module's own (``python -m reposearch.embedded_stack up`` in a temporary data directory):
the web server SIGKILLed comes back and the worker never noticed; the worker SIGKILLed comes
back and takes a queued job; Redis and PostgreSQL SIGKILLed come back; a web server that cannot start at all
(its port taken) makes ``make up`` give up after its retries, exit non-zero and say why.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from reposearch.embedded_services import free_port, pid_alive
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo
from tests.reposearch.test_make_up import READY_LINE, Stack, get, user_environment

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def make_up(tmp: Path, env: dict[str, str]) -> Iterator[tuple[Stack, subprocess.Popen[bytes]]]:
    log = tmp / "make-up.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "reposearch.embedded_stack", "up"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        yield Stack(f"http://{env['REPO_SEARCH_BIND_ADDR']}", env, log, 0), process
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGINT)
            try:
                process.wait(90)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("make-up-restarts")
    env, _ = user_environment(tmp)
    env["REPO_SEARCH_ALLOW_PRIVATE_HOSTS"] = "1"  # the test's git server is on 127.0.0.1
    with make_up(tmp, env) as (running, process):
        deadline = time.monotonic() + 240
        while READY_LINE not in running.output():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"make up did not get ready:\n{running.output()[-4000:]}")
            time.sleep(0.5)
        yield running
        assert process.poll() is None, running.output()[-4000:]  # it never gave up


def _pid(stack: Stack, name: str) -> int:
    return int((Path(stack.env["REPO_SEARCH_DATA_DIR"]) / "run" / f"{name}.pid").read_text())


def _wait(what: str, predicate, stack: Stack, seconds: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen:\n{stack.output()[-4000:]}")
        time.sleep(0.5)


def _healthy(stack: Stack) -> bool:
    try:
        return get(f"{stack.base}/api/health")[0] == 200
    except OSError:  # not listening yet
        return False


def _token(stack: Stack) -> str:
    path = Path(stack.env["REPO_SEARCH_DATA_DIR"]) / "initial-admin.txt"
    return dict(line.split(": ", 1) for line in path.read_text().splitlines())["token"]


def _api(stack: Stack, method: str, path: str, body: dict | None = None) -> Any:  # type: ignore[type-arg]
    request = urllib.request.Request(
        f"{stack.base}{path}", method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {_token(stack)}"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_a_killed_web_server_comes_back_and_the_worker_is_untouched(stack: Stack) -> None:
    web, worker = _pid(stack, "web"), _pid(stack, "worker")
    os.kill(web, signal.SIGKILL)

    _wait("a new web server", lambda: _pid(stack, "web") != web, stack, 30)
    _wait("health 200 again", lambda: _healthy(stack), stack)
    assert re.search(r"web exited \(code -9, SIGKILL\); restarting it in 1 s", stack.output())
    assert _pid(stack, "worker") == worker and pid_alive(worker)  # the worker was left alone
    assert "worker exited" not in stack.output()


def test_a_killed_worker_comes_back_and_takes_a_queued_job(stack: Stack, tmp_path: Path) -> None:
    repo = init_bare_repo(str(tmp_path / "small.git"))
    commit_files(repo, {"src/app.py": "def greet(name):\n    return f'hello {name}'\n"})
    worker = _pid(stack, "worker")
    os.kill(worker, signal.SIGKILL)
    with GitHttpServer({"team/small.git": repo}) as server:
        created = _api(stack, "POST", "/api/repos", {"url": server.url("team/small.git")})
        _wait("a new worker", lambda: _pid(stack, "worker") != worker, stack, 30)
        job_id = created["job"]["id"]
        _wait(
            "the queued job finishing",
            lambda: _api(stack, "GET", f"/api/jobs/{job_id}")["state"] in {"done", "failed"},
            stack,
            240,
        )
    job = _api(stack, "GET", f"/api/jobs/{job_id}")
    assert job["state"] == "done", job
    assert re.search(r"worker exited \(code -9, SIGKILL\); restarting it in 1 s", stack.output())
    assert not pid_alive(worker)


def test_a_killed_redis_comes_back(stack: Stack) -> None:
    pidfile = Path(stack.env["REPO_SEARCH_DATA_DIR"]) / "redis" / "redis.pid"
    redis = int(pidfile.read_text())
    os.kill(redis, signal.SIGKILL)

    def redis_back() -> bool:
        try:
            return int(pidfile.read_text()) != redis
        except (OSError, ValueError):
            return False

    _wait("a new Redis", redis_back, stack, 60)
    assert "Redis exited (code -9, SIGKILL); restarting it in 1 s" in stack.output()
    _wait("health 200 again", lambda: _healthy(stack), stack)


def test_a_killed_postgresql_comes_back(stack: Stack) -> None:
    pidfile = Path(stack.env["REPO_SEARCH_DATA_DIR"]) / "postgres" / "postmaster.pid"
    postmaster = int(pidfile.read_text().splitlines()[0])
    os.kill(postmaster, signal.SIGKILL)

    def postgres_back() -> bool:
        try:
            pid = int(pidfile.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return False
        return pid != postmaster and pid_alive(pid)

    _wait("a new PostgreSQL", postgres_back, stack, 120)
    assert "PostgreSQL exited (code unknown); restarting it in 1 s" in stack.output()
    _wait("health 200 again", lambda: _healthy(stack), stack)
    # What was indexed before is still there (the worker test added team/small).
    assert any(r["name"].endswith("small") for r in _api(stack, "GET", "/api/repos"))


def test_a_web_server_that_cannot_start_makes_make_up_give_up(tmp_path: Path) -> None:
    env, _ = user_environment(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        env["REPO_SEARCH_BIND_ADDR"] = f"127.0.0.1:{taken.getsockname()[1]}"
        with make_up(tmp_path, env) as (running, process):
            try:
                code = process.wait(400)
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
