"""What ``make up`` makes sure of before it starts anything, and ``make down``.

- **One ``make up`` per data directory.** It holds an exclusive lock on ``run/up.lock`` for its
  whole life (``fcntl.flock``: the kernel lets go however the process ends, ``kill -9``
  included) with its pid inside. A second ``make up`` on the same data directory is refused,
  naming the running one and how to stop it; only a run that holds the lock stops the worker and
  web server an earlier, crashed run left behind.
- **Its ports are free.** The web address, and PostgreSQL's and Redis's ports unless this data
  directory's own servers hold them (a crashed run's PostgreSQL is reused, its Redis restarted):
  a port another program holds is refused with the setting that moves it, before anything
  starts, instead of a server that fails behind a health check another server answers.
- **``make down``** stops the ``make up`` of this data directory (SIGTERM, as Ctrl-C does) and
  waits until it has stopped everything.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reposearch.embedded_services import (
    EmbeddedPostgres,
    EmbeddedRedis,
    pid_alive,
    say,
    wait_until,
)

LOCK_NAME = "up.lock"
DOWN_WAIT_SECS = 90.0  # the supervisor gives each child up to 20 s; PostgreSQL stops last


class StackRefused(Exception):
    """``make up`` cannot start: the message says why and what to do."""


def lock_path(run_dir: Path) -> Path:
    return run_dir / LOCK_NAME


def _holder(path: Path) -> int | None:
    with contextlib.suppress(ValueError, OSError):
        return int(path.read_text().strip() or "0") or None
    return None


@contextlib.contextmanager
def only_run(run_dir: Path, data_dir: Path) -> Iterator[None]:
    """Hold this data directory's lock while the block runs; ``StackRefused`` when another
    ``make up`` holds it."""
    path = lock_path(run_dir)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by the children
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder(path)
            running = f" (pid {pid})" if pid else ""
            raise StackRefused(
                f"reposearch is already running from {data_dir}{running}: open the address it"
                " printed, or stop it first (Ctrl-C in its terminal, or make down). To run a"
                " second one beside it, give it its own REPO_SEARCH_DATA_DIR and ports"
                " (REPO_SEARCH_BIND_ADDR, REPO_SEARCH_PG_PORT, REPO_SEARCH_REDIS_PORT)."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # the lock goes with it


def _bind_error(host: str, port: int) -> int | None:
    """The error binding ``host:port`` meets (``errno``), as the server's own bind would
    (``SO_REUSEADDR``: connections of a server just stopped do not count); None when it binds."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as error:
            return error.errno or -1
    return None


def _taken(host: str, port: int) -> bool:
    return _bind_error(host, port) == errno.EADDRINUSE


def check_ports(settings: Any, root: Path) -> None:
    """``StackRefused`` naming the setting to change when another program holds a port this
    stack is about to listen on."""
    host = settings.REPO_SEARCH_BIND_HOST.strip("[]") or "0.0.0.0"  # noqa: S104 - a check
    port = settings.REPO_SEARCH_BIND_PORT
    if _bind_error(host, port) == errno.EADDRNOTAVAIL:
        raise StackRefused(
            f"no network interface of this machine has the address {host}"
            f" (REPO_SEARCH_BIND_ADDR={settings.REPO_SEARCH_BIND_ADDR}): use one it has, e.g."
            f" REPO_SEARCH_BIND_ADDR=127.0.0.1:{port} (this machine only) or 0.0.0.0:{port}"
        )
    if _taken(host, port):
        raise StackRefused(
            f"another program listens on {settings.REPO_SEARCH_BIND_ADDR}, where the web server"
            f" would: stop it, or choose another address, e.g."
            f" REPO_SEARCH_BIND_ADDR={settings.REPO_SEARCH_BIND_HOST}:{port + 1} make up"
        )
    if not os.environ.get("DATABASE_URL"):
        postgres = EmbeddedPostgres(root, settings.REPO_SEARCH_PG_PORT)
        if postgres.running_pid() is None and _taken("127.0.0.1", postgres.port):
            raise StackRefused(_port_message("PostgreSQL", postgres.port, "REPO_SEARCH_PG_PORT"))
    if not os.environ.get("REDIS_URL"):
        redis = EmbeddedRedis(root, settings.REPO_SEARCH_REDIS_PORT)
        ours = _holder(redis.pidfile) if redis.pidfile.exists() else None
        if not (ours and pid_alive(ours)) and _taken("127.0.0.1", redis.port):
            raise StackRefused(_port_message("Redis", redis.port, "REPO_SEARCH_REDIS_PORT"))


def _port_message(server: str, port: int, variable: str) -> str:
    return (
        f"another program listens on 127.0.0.1:{port}, where {server} would (it is not this"
        f" data directory's {server}): stop it, or choose another port, e.g."
        f" {variable}={port + 1} make up (then give the same {variable} to manage.py commands)"
    )


def stop_leftover_children(run_dir: Path) -> None:
    """After a crash or ``kill -9`` of ``make up``, its worker and web server may still run
    (called while holding the lock: no live ``make up`` owns them)."""
    for pidfile in run_dir.glob("*.pid"):
        with contextlib.suppress(ValueError, OSError):
            pid = int(pidfile.read_text().strip())
            if pid_alive(pid):
                say(f"stopping {pidfile.stem} left running by an earlier run (pid {pid})")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGTERM)
                if not wait_until(lambda pid=pid: not pid_alive(pid), 20):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, signal.SIGKILL)
        pidfile.unlink(missing_ok=True)


def command_down(run_dir: Path, data_dir: Path) -> int:
    """Stop the ``make up`` of this data directory; 0 once it has stopped, 1 when none runs
    or it did not stop in time."""
    path = lock_path(run_dir)
    pid = _holder(path) if path.exists() else None
    if pid is None or not _locked(path):
        say(f"reposearch is not running from {data_dir}")
        return 1
    say(f"stopping reposearch (pid {pid})")
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + DOWN_WAIT_SECS
    while time.monotonic() < deadline:
        if not _locked(path):
            say("stopped")
            return 0
        time.sleep(0.25)
    say(f"reposearch (pid {pid}) has not stopped after {DOWN_WAIT_SECS:.0f} s; see its terminal")
    return 1


def _locked(path: Path) -> bool:
    """Whether some process holds the lock at ``path``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
