"""What ``make up`` makes sure of before it starts anything (``reposearch/stack_guard.py``), and
how it stops: a port another program holds is refused at once with the setting that moves it;
a hang-up (a closed terminal or SSH session) stops everything as Ctrl-C does; ``make down``
stops it from another terminal. (A second ``make up`` on a running one's data directory:
tests/reposearch/test_make_up_restarts.py, on the shared stack.)"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposearch.embedded_services import free_port, pid_alive, wait_until
from tests.make_up_stack import ROOT, Stack, make_up, user_environment

pytestmark = pytest.mark.timeout(600)


def _command(env: dict[str, str], action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reposearch.embedded_stack", action],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


@pytest.fixture
def listening() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        yield taken.getsockname()[1]


@pytest.mark.parametrize(
    ("variable", "server"),
    [
        ("REPO_SEARCH_BIND_ADDR", "the web server"),
        ("REPO_SEARCH_PG_PORT", "PostgreSQL"),
        ("REPO_SEARCH_REDIS_PORT", "Redis"),
    ],
)
def test_a_port_another_program_holds_is_refused_before_anything_starts(
    listening: int, variable: str, server: str
) -> None:
    env = user_environment()
    env[variable] = f"127.0.0.1:{listening}" if variable.endswith("ADDR") else str(listening)
    done = _command(env, "up")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert f"another program listens on 127.0.0.1:{listening}, where {server} would" in said
    assert f"{variable}=" in said and "make up" in said  # the setting that moves it
    assert "] starting" not in said and "Traceback" not in said, said
    assert not (Path(env["REPO_SEARCH_DATA_DIR"]) / "postgres").exists()  # nothing started


def test_an_address_of_no_interface_here_is_refused_with_ones_it_has() -> None:
    env = user_environment()
    env["REPO_SEARCH_BIND_ADDR"] = "192.0.2.1:9000"  # TEST-NET-1: never a local address
    done = _command(env, "up")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "no network interface of this machine has the address 192.0.2.1" in said
    assert "REPO_SEARCH_BIND_ADDR=127.0.0.1:9000" in said and "] starting" not in said


def test_make_down_with_nothing_running_says_so() -> None:
    env = user_environment()
    done = _command(env, "down")
    assert done.returncode == 1
    assert f"reposearch is not running from {env['REPO_SEARCH_DATA_DIR']}" in done.stdout


def _processes(stack: Stack) -> dict[str, int]:
    """The stack's processes: the supervised children, PostgreSQL and Redis."""
    found = {path.stem: int(path.read_text()) for path in (stack.data / "run").glob("*.pid")}
    found["postgres"] = int((stack.data / "postgres" / "postmaster.pid").read_text().split()[0])
    found["redis"] = int((stack.data / "redis" / "redis.pid").read_text())
    assert {"web", "worker"} <= set(found), found
    return found


def _left_running(running: dict[str, int]) -> list[str]:
    """Those of ``running`` still running a few seconds on: PostgreSQL's postmaster removes its
    pid file just before it exits, and one that exited is no zombie of ours (pg_ctl's child)."""

    def alive(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return pid_alive(pid) and state != "Z"

    wait_until(lambda: not any(alive(pid) for pid in running.values()), 10)
    return [name for name, pid in running.items() if alive(pid)]


def test_a_hang_up_and_make_down_each_stop_everything(tmp_path: Path) -> None:
    env = user_environment()
    with make_up(tmp_path, env) as stack:
        running = _processes(stack)
        stack.process.send_signal(signal.SIGHUP)  # the terminal it ran in was closed
        assert stack.process.wait(120) == 0, stack.output()[-4000:]
        assert stack.output().splitlines()[-1].endswith("stopped")
        assert _left_running(running) == []

    with make_up(tmp_path, env) as stack:  # a second start, stopped from another terminal
        running = _processes(stack)
        down = _command(env, "down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert f"stopping reposearch (pid {stack.process.pid})" in down.stdout
        assert down.stdout.splitlines()[-1].endswith("stopped")
        assert stack.process.wait(10) == 0
        assert _left_running(running) == []
