"""A whole ``make up`` stack for tests and benchmarks that look at it from outside.

``python -m reposearch.embedded_stack up`` (what ``make up`` runs: its own PostgreSQL and Redis
on free ports, the worker with beat, the web server) in a temporary data directory, with the
environment a user's shell would have (``user_environment``): no ``DATABASE_URL``, no
``DEBUG``, only the ports. ``make_up`` starts it, waits for the line it prints when it is ready
and stops it with Ctrl-C (SIGINT) afterwards, as a user would::

    with make_up(tmp_path, user_environment()) as stack:
        stack.api("GET", "/api/repos")
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from reposearch.embedded_services import free_port

if TYPE_CHECKING:  # the benchmarks import this module too, without pytest
    import pytest

ROOT = Path(__file__).resolve().parents[1]
READY_LINE = "reposearch is ready"
T = TypeVar("T")


@dataclass
class Stack:
    base: str  # http://127.0.0.1:PORT of the web server
    env: dict[str, str]
    log: Path  # everything ``make up`` printed
    process: subprocess.Popen[bytes]

    @property
    def data(self) -> Path:
        return Path(self.env["REPO_SEARCH_DATA_DIR"])

    @property
    def pg_port(self) -> int:
        return int(self.env["REPO_SEARCH_PG_PORT"])

    @property
    def redis_port(self) -> int:
        return int(self.env["REPO_SEARCH_REDIS_PORT"])

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def initial_admin(self) -> dict[str, str]:
        """The first administrator's ``initial-admin.txt``: username, password, token."""
        text = (self.data / "initial-admin.txt").read_text()
        return dict(line.split(": ", 1) for line in text.splitlines())

    def call(self, method: str, path: str, body: Any = None, token: str = "") -> tuple[int, Any]:
        """(status, JSON answer or None) of one API call, with the README's headers."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.base}{path}", data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return int(response.status), _json(response.read())
        except urllib.error.HTTPError as error:
            return int(error.code), _json(error.read())

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """The JSON answer of a call with the first administrator's token (which must succeed)."""
        status, answer = self.call(method, path, body, self.initial_admin()["token"])
        assert status < 400, (method, path, status, answer)
        return answer

    def healthy(self) -> bool:
        try:
            return get(f"{self.base}/api/health")[0] == 200
        except OSError:  # not listening (yet, or again)
            return False

    def wait_for(self, predicate: Callable[[], T], what: str, seconds: float = 120) -> T:
        """``predicate()``'s first true value; fails with the end of the stack's output."""
        return wait_for(predicate, what, seconds, lambda: self.output()[-4000:])


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


# Data directories user_environment made; make_up removes each when its stack stops.
_PRIVATE_DATA: set[str] = set()


def private_data_dir() -> Path:
    """A data directory outside pytest's /tmp/pytest-of-<user> (as the ``pg_home`` fixture's):
    the stack's PostgreSQL runs as an unprivileged user that must reach it, and any other pytest
    session of the same user sets that directory back to 0700 when it starts."""
    path = Path(tempfile.mkdtemp(prefix="reposearch-test-make-up-"))
    _PRIVATE_DATA.add(str(path))
    return path


@atexit.register
def _remove_private_data() -> None:
    for path in list(_PRIVATE_DATA):
        shutil.rmtree(path, ignore_errors=True)
        _PRIVATE_DATA.discard(path)


def user_environment() -> dict[str, str]:
    """A shell's environment: the test run's servers and settings module left out, free ports,
    a private data directory (``private_data_dir``)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "DEBUG")
        and not key.startswith(("REPO_SEARCH_", "LLM_", "PYTEST"))
    }
    env.update(
        REPO_SEARCH_DATA_DIR=str(private_data_dir()),
        REPO_SEARCH_PG_PORT=str(free_port()),
        REPO_SEARCH_REDIS_PORT=str(free_port()),
        REPO_SEARCH_BIND_ADDR=f"127.0.0.1:{free_port()}",
        LLM_PROVIDER="none",
    )
    return env


def wait_for(
    predicate: Callable[[], T],
    what: str,
    seconds: float = 120,
    context: Callable[[], str] | None = None,
) -> T:
    """``predicate()``'s first true value, asked every half second for ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen" + (f":\n{context()}" if context else ""))
        time.sleep(0.5)


def manage(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python manage.py ARGS`` as a user runs it beside the stack (its output captured)."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def get(url: str, opener: urllib.request.OpenerDirector | None = None) -> tuple[int, str, str]:
    """(status, content type, body) of a GET."""
    try:
        with (opener or urllib.request.build_opener()).open(url, timeout=30) as response:
            body = response.read().decode(errors="replace")
            return response.status, response.headers.get("Content-Type", ""), body
    except urllib.error.HTTPError as error:
        body = error.read().decode(errors="replace")
        return error.code, error.headers.get("Content-Type", ""), body


@contextmanager
def make_up(
    tmp: Path, env: dict[str, str], *, ready: bool = True, ready_secs: float = 240
) -> Iterator[Stack]:
    """``make up`` with ``env``, its output in ``tmp/make-up.log``; stopped with SIGINT on exit.

    ``ready``: wait until it prints that it is ready (it failing to, or exiting, fails the test).
    """
    log = tmp / "make-up.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "reposearch.embedded_stack", "up"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    stack = Stack(f"http://{env['REPO_SEARCH_BIND_ADDR']}", env, log, process)
    try:
        if ready:
            stack.wait_for(
                lambda: READY_LINE in stack.output() or process.poll() is not None,
                "make up getting ready",
                ready_secs,
            )
            assert process.poll() is None, f"make up exited:\n{stack.output()[-4000:]}"
        yield stack
    finally:
        stop(process)
        if env["REPO_SEARCH_DATA_DIR"] in _PRIVATE_DATA:
            shutil.rmtree(env["REPO_SEARCH_DATA_DIR"], ignore_errors=True)
            _PRIVATE_DATA.discard(env["REPO_SEARCH_DATA_DIR"])


def stop(process: subprocess.Popen[bytes], seconds: float = 90) -> None:
    """Ctrl-C for a process started in a session of its own; SIGKILL to the group if it hangs."""
    if process.poll() is not None:
        return
    os.kill(process.pid, signal.SIGINT)
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


class SharedMakeUp:
    """One ``make up`` for test_make_up.py (what a newcomer meets: looked at, not disturbed) and
    test_make_up_restarts.py (its processes killed one by one, each coming back), which runs
    after it and stops it at its end: starting the whole stack is the slow part of both. The
    one setting beyond a user's shell: the restart tests' git server is on 127.0.0.1."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.tmp_path_factory = tmp_path_factory
        self.running: Stack | None = None
        self.exits = ExitStack()

    def get(self) -> Stack:
        """The running stack; a new one if there is none (yet, or again)."""
        if self.running is None:
            env = user_environment()
            env["REPO_SEARCH_ALLOW_PRIVATE_HOSTS"] = "1"
            tmp = self.tmp_path_factory.mktemp("make-up")
            self.running = self.exits.enter_context(make_up(tmp, env))
        return self.running

    def stop(self) -> None:
        self.running = None
        self.exits.close()
