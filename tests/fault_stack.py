"""A whole reposearch stack of its own for fault tests: PostgreSQL, Redis and a Celery worker
that the test may stop, restart or kill without disturbing the session's servers.

The test process drives it as an operator would, from outside: ``manage.py`` commands in
processes of their own (with the stack's environment; forked from a warm one,
``tests.warm_manage``) to add repositories, and plain SQL to watch jobs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kombu.exceptions
import psycopg
import redis.exceptions
from celery import Celery

from reposearch.embedded_services import EmbeddedPostgres, EmbeddedRedis, free_port
from reposearch.processes import worker_command
from tests.warm_manage import WarmManage

ROOT = Path(__file__).resolve().parent.parent
FINISHED = {"done", "completed_with_errors", "failed", "cancelled"}


class WatchesJobs:
    """Plain-SQL reads of a stack's database (``self.postgres``), for tests watching from outside."""

    postgres: EmbeddedPostgres

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.postgres.url(), autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def job(self, job_id: int) -> dict[str, Any]:
        with psycopg.connect(self.postgres.url(), autocommit=True) as conn:
            cursor = conn.execute("SELECT * FROM indexing_indexjob WHERE id = %s", (job_id,))
            names = [column.name for column in cursor.description or []]
            row = cursor.fetchone()
        assert row is not None, f"job {job_id} is gone"
        return dict(zip(names, row, strict=True))


class FaultStack(WatchesJobs):
    def __init__(
        self, root: Path, data_dir: Path | None = None, *, persistent_redis: bool = False
    ) -> None:
        self.root = root
        # PostgreSQL runs as an unprivileged user that must reach its data directory, so it lives
        # outside pytest's /tmp/pytest-of-<user>: any other pytest session of the same user sets
        # that directory back to 0700 when it starts (a cluster there then fails to start or stop).
        self.private_root = Path(tempfile.mkdtemp(prefix="reposearch-fault-pg-"))
        # Throwaway: no fsync (a "restart" here is a stop and a start, not a power cut).
        self.postgres = EmbeddedPostgres(self.private_root / "pg", free_port(), durable=False)
        self.redis = EmbeddedRedis(root / "redis", free_port(), persistent=persistent_redis)
        self.env = dict(os.environ)
        self.env.update(
            DATABASE_URL=self.postgres.url(),
            REDIS_URL=self.redis.url(),
            DJANGO_SETTINGS_MODULE="reposearch.settings.test",
            REPO_SEARCH_DATA_DIR=str(data_dir or root / "data"),
            REPO_SEARCH_ALLOW_LOCAL_PATHS="1",
            REPO_SEARCH_ALLOW_PRIVATE_HOSTS="1",
            # A starting worker looks for the jobs a killed one lost after 3 s, not 15.
            REPO_SEARCH_RESUME_AFTER_START_DELAY_SECS="3",
            # A killed pool child's repository lock frees itself after 20 s, not 90: the
            # redelivered task waits that long (renewed every 7 s while its holder lives).
            REPO_SEARCH_LOCK_TTL_SECS="20",
        )
        self.data_dir = Path(self.env["REPO_SEARCH_DATA_DIR"])
        self.worker: subprocess.Popen[bytes] | None = None
        self.log_path = root / "worker.log"
        self.commands = WarmManage(self.env, root / "manage.log")

    # --- the servers -------------------------------------------------------------------------
    def start(self, *, worker: bool = True) -> None:
        self.postgres.start()
        self.redis.start()
        self.manage("migrate", "-v0")
        if worker:
            self.start_worker()

    def stop(self) -> None:
        self.commands.stop()
        self.kill_worker()
        self.redis.stop()
        self.postgres.stop()
        shutil.rmtree(self.private_root, ignore_errors=True)

    def start_worker(self) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child process owns it
        command = worker_command(concurrency=2, program=(sys.executable, "-m", "celery"))
        self.worker = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        log.close()
        # Not the current app: shared tasks (``.delay()``) of later tests in this process would
        # go to this stack's Redis, long stopped, instead of the session's.
        app = Celery(broker=self.redis.url(), set_as_current=False)
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                if self.worker.poll() is not None:
                    raise RuntimeError(f"worker exited: {self.log_tail()}")
                try:
                    if app.control.ping(timeout=1.0):
                        return
                except (OSError, redis.exceptions.ConnectionError, kombu.exceptions.KombuError):
                    time.sleep(0.5)  # a Redis that has just been restarted
            raise RuntimeError(f"worker did not answer a ping: {self.log_tail()}")
        finally:
            app.close()

    def kill_worker(self) -> None:
        if self.worker is not None and self.worker.poll() is None:
            os.killpg(self.worker.pid, 9)
            self.worker.wait(30)

    def kill_worker_main(self) -> list[int]:
        """SIGKILL the worker's main process only; return the pool children it had (they are
        meant to die with it: Celery gives them a parent-death signal)."""
        import psutil

        assert self.worker is not None and self.worker.poll() is None
        children = [child.pid for child in psutil.Process(self.worker.pid).children(True)]
        os.kill(self.worker.pid, 9)
        self.worker.wait(30)
        return children

    def kill_pool_children(self) -> list[int]:
        """SIGKILL the worker's pool processes only (the main process lives on, sees them lost
        and forks new ones); return the ones killed, once they are gone."""
        import psutil

        assert self.worker is not None and self.worker.poll() is None
        children = psutil.Process(self.worker.pid).children(recursive=True)
        assert children, "the worker had no pool processes"
        for child in children:
            child.kill()
        gone, alive = psutil.wait_procs(children, timeout=20)
        assert not alive, f"pool processes outlived SIGKILL: {alive}"
        return [child.pid for child in gone]

    def worker_alive(self) -> bool:
        return self.worker is not None and self.worker.poll() is None

    def log_tail(self, characters: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-characters:]

    # --- driving it --------------------------------------------------------------------------
    def manage(self, *args: str) -> str:
        status, output = self.commands.run(*args)
        assert status == 0, output + self.commands.log_path.read_text(errors="replace")[-3000:]
        return output

    def add_repository(self, url: str) -> int:
        code = (
            "from indexing.services.repositories import add_repository\n"
            f"print(add_repository({url!r}).pk)"
        )
        return int(self.manage("shell", "-c", code).strip().splitlines()[-1])

    def health(self) -> tuple[int, list[str]]:
        """What ``GET /api/health`` answers now, asked anonymously as a load balancer would: the
        status code and the parts it says are down."""
        code = (
            "import json\nfrom django.test import Client\n"
            "response = Client(HTTP_HOST='localhost').get('/api/health')\n"
            "print(json.dumps([response.status_code, response.json()['down']]))"
        )
        status, down = json.loads(self.manage("shell", "-c", code).strip().splitlines()[-1])
        return int(status), list(down)

    def clone_dirs(self) -> set[str]:
        """Entries of the clone directory (``<data>/repos``): one per repository, no leftovers."""
        repos = self.data_dir / "repos"
        return {item.name for item in repos.iterdir()} if repos.exists() else set()

    @contextmanager
    def holding(self, sql: str, *params: Any) -> Iterator[None]:
        """Run ``sql`` in a transaction that stays open (its locks held) until the block ends."""
        conn = psycopg.connect(self.postgres.url())
        try:
            conn.execute(sql, params)
            yield
        finally:
            with contextlib.suppress(psycopg.Error):  # the server may have gone meanwhile
                conn.rollback()
            conn.close()

    def wait_blocked(self, containing: str, seconds: float = 240) -> str:
        """Wait until a worker's statement ``containing`` this waits for a lock; return it."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            rows = self.query(
                "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND pid <> pg_backend_pid() AND position(%s in query) > 0",
                containing,
            )
            if rows:
                return str(rows[0][0])
            time.sleep(0.1)
        sessions = self.query(
            "SELECT pid, state, wait_event_type, wait_event, left(query, 160) FROM"
            " pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        raise AssertionError(
            f"no {containing!r} waits for a lock; sessions: {sessions}\n"
            f"worker log:\n{self.log_tail()}"
        )

    def wait_for(self, job_id: int, predicate: Any, seconds: float) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while True:
            try:
                job = self.job(job_id)
            except psycopg.OperationalError:
                job = None  # the database is down right now
            if job is not None and predicate(job):
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id}: {job}\nworker log:\n{self.log_tail()}")
            time.sleep(0.1)

    def wait_until_finished(self, job_id: int, seconds: float = 240) -> dict[str, Any]:
        return self.wait_for(job_id, lambda job: job["state"] in FINISHED, seconds)


@contextmanager
def fault_stack(
    root: Path, data_dir: Path | None = None, *, worker: bool = True, persistent_redis: bool = False
) -> Iterator[FaultStack]:
    stack = FaultStack(root, data_dir, persistent_redis=persistent_redis)
    try:
        stack.start(worker=worker)
        yield stack
    finally:
        stack.stop()
