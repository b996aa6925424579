"""``make up``'s supervision: a child that dies is started again, with backoff, instead of
taking everything down.

The worker and the web server are child processes; PostgreSQL and Redis, when ``make up``
started them, are watched the same way. After a crash a process waits 1 s, 2 s, 4 s … (at most
``MAX_DELAY_SECS``) before it starts again; once it has run ``HEALTHY_AFTER_SECS`` its count of
crashes starts over. ``GIVE_UP_AFTER`` crashes in a row, each sooner than that after its start,
mean it cannot run here (a port in use, a broken setting): everything stops and ``make up``
exits non-zero saying which process and why.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from reposearch.embedded_services import say

FIRST_DELAY_SECS = 1.0
MAX_DELAY_SECS = 60.0
HEALTHY_AFTER_SECS = 60.0
GIVE_UP_AFTER = 5
STOP_WAIT_SECS = 20


class GaveUp(Exception):
    """A process crashed ``GIVE_UP_AFTER`` times in a row soon after starting."""


@dataclass
class Backoff:
    """The delays between restarts of one process."""

    first: float = FIRST_DELAY_SECS
    cap: float = MAX_DELAY_SECS
    healthy_after: float = HEALTHY_AFTER_SECS
    give_up_after: int = GIVE_UP_AFTER
    crashes: int = 0

    def after_crash(self, ran_for: float) -> float | None:
        """The delay before the next start, or None when it is time to give up."""
        if ran_for >= self.healthy_after:
            self.crashes = 0  # it ran long enough: this crash starts a new count
        self.crashes += 1
        if self.crashes >= self.give_up_after:
            return None
        return float(min(self.cap, self.first * 2 ** (self.crashes - 1)))


@dataclass
class Watched:
    """One supervised process: how to start it and whether it still runs."""

    name: str
    start: Callable[[], None]
    exit_code: Callable[[], int | None]  # None while it runs; -1: it stopped, code unknown
    backoff: Backoff = field(default_factory=Backoff)
    started_at: float = 0.0
    restart_at: float | None = None

    def begin(self) -> None:
        self.start()
        self.started_at = time.monotonic()
        self.restart_at = None


class Probe:
    """A check (``make up``'s: does ``/api/health`` answer 200?) asked in a thread of its own, so
    the rounds that restart crashed processes never wait for it: a web server slow to answer, or
    a port held by something that accepts and never answers, costs no restart its delay."""

    def __init__(self, ask: Callable[[], int]) -> None:
        self._ask = ask
        self._threads = ThreadPoolExecutor(1, thread_name_prefix="probe")
        self._pending: Future[int] | None = None

    def poll(self) -> int | None:
        """The last ask's answer once it has come (and the check asked again), else None."""
        pending = self._pending
        if pending is not None and not pending.done():
            return None
        self._pending = self._threads.submit(self._ask)
        return pending.result() if pending is not None else None

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)


class Child:
    """A child process in a session of its own (its pool or workers die with it), its pid in
    ``<run>/<name>.pid`` so a later ``make up`` can stop it after a crash of ours."""

    def __init__(self, name: str, command: Sequence[str], env: dict[str, str], run_dir: Path):
        self.name = name
        self.command = list(command)
        self.env = env
        self.pidfile = run_dir / f"{name}.pid"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, env=self.env, start_new_session=True)
        self.pidfile.write_text(str(self.process.pid))

    def exit_code(self) -> int | None:
        if self.process is None:
            return None
        code = self.process.poll()
        if code is not None:
            self._signal_group(signal.SIGKILL)  # what it left behind (pool children, workers)
        return code

    def _signal_group(self, signum: int) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signum)

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self._signal_group(signal.SIGTERM)

    def stop(self) -> None:
        """SIGTERM to its whole group, SIGKILL after ``STOP_WAIT_SECS``."""
        if self.process is None:
            return
        self.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(STOP_WAIT_SECS)
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)

    def watched(self) -> Watched:
        return Watched(self.name, self.start, self.exit_code)


def _shown(code: int) -> str:
    if code == -1:
        return "unknown"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"{code}, {signal.Signals(-code).name}"
    return str(code)


def check(processes: Sequence[Watched], now: float | None = None) -> None:
    """One round: notice processes that died, start those whose delay is over.

    Raises ``GaveUp`` (after saying why) when one has crashed too often in a row."""
    now = time.monotonic() if now is None else now
    for process in processes:
        if process.restart_at is not None:
            if now >= process.restart_at:
                say(f"starting {process.name} again")
                try:
                    process.begin()
                except Exception as error:  # a start that fails is one more crash
                    _crashed(process, f"could not start: {error}", now)
            continue
        code = process.exit_code()
        if code is not None:
            _crashed(process, f"exited (code {_shown(code)})", now)


def _crashed(process: Watched, what: str, now: float) -> None:
    delay = process.backoff.after_crash(now - process.started_at)
    if delay is None:
        message = (
            f"{process.name} {what}; it crashed {process.backoff.crashes} times in a row, each"
            f" within {process.backoff.healthy_after:g} s of starting: giving up and stopping"
            " everything (its output above says why)"
        )
        say(message)
        raise GaveUp(message)
    say(f"{process.name} {what}; restarting it in {delay:g} s")
    process.restart_at = now + delay
