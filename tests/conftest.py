"""Shared fixtures: a real Celery worker process on the test database, factories."""

from __future__ import annotations

import gc
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.conf import settings
from django.db import connection
from django.db.models.signals import post_migrate

from tests.model_server import model_server  # noqa: F401 - a fixture for every test module
from tests.parallel_workers import make_scheduler, use_own_redis_database
from tests.refusals import public_dns  # noqa: F401 - a fixture for every test module
from tests.shared_rows import ROW_FIXTURES, open_shared_rows
from tests.tier_times import pytest_runtest_logreport, pytest_terminal_summary, record_tiers

__all__ = ["pytest_runtest_logreport", "pytest_terminal_summary"]  # hooks: time by tier

ROOT = Path(__file__).resolve().parent.parent
use_own_redis_database()  # under pytest-xdist: this worker's Redis database


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Modules sharing a costly session fixture on one worker (tests/parallel_workers.py)."""
    return make_scheduler(config, log)


def _test_database_url() -> str:
    db = connection.settings_dict
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db["PORT"] else ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgresql://{db['USER']}{password}@{host}{port}/{db['NAME']}"


class WorkerProcess:
    """A real ``celery worker`` process consuming every queue, connected to the test database."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None
        (ROOT / ".pytest_cache").mkdir(exist_ok=True)
        xdist_worker = os.environ.get("PYTEST_XDIST_WORKER")  # one log per pytest-xdist worker
        name = f"celery-worker-{xdist_worker}.log" if xdist_worker else "celery-worker.log"
        self.log_path = ROOT / ".pytest_cache" / name

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        from reposearch.celery import app
        from reposearch.processes import worker_command

        name = f"test-{uuid.uuid4().hex[:8]}@%h"
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child process owns it
        command = worker_command(
            concurrency=2,
            name=name,
            program=(sys.executable, "-m", "celery"),
            extra=("--without-gossip", "--without-mingle"),
        )
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited; see {self.log_path}")
            if app.control.ping(timeout=1.0):
                return
        self.stop()
        raise RuntimeError("celery worker did not answer a ping within 90 s")

    def pool_children(self) -> list[int]:
        import psutil

        return [child.pid for child in psutil.Process(self.pid).children(recursive=True)]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait(10)


def _role_groups_after_a_flush(using: str = "default", **_: Any) -> None:
    """A transactional test ends with a flush of every table, then Django's ``post_migrate``
    (which makes content types and permissions again); this puts back the role groups the
    migrations make, as every other test expects them. In a serial run pytest-django runs the
    transactional tests last; under pytest-xdist a worker runs each module's tests together, so
    other modules' tests follow a flush."""
    from django.contrib.auth.models import Group

    migration = importlib.import_module("accounts.migrations.0003_role_groups")
    for name in migration.ROLE_GROUP_NAMES:
        Group.objects.using(using).get_or_create(name=name)


post_migrate.connect(
    _role_groups_after_a_flush,
    sender=django_apps.get_app_config("accounts"),
    dispatch_uid="tests.role_groups_after_a_flush",
)


@pytest.fixture
def pg_home() -> Iterator[Path]:
    """A directory for a PostgreSQL cluster of the test's own, outside pytest's
    /tmp/pytest-of-<user>: the cluster runs as an unprivileged user that must reach it, and any
    other pytest session of the same user sets that directory back to 0700 when it starts."""
    home = Path(tempfile.mkdtemp(prefix="reposearch-test-pg-"))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker) -> Iterator[WorkerProcess]:
    env = dict(os.environ)
    env["DATABASE_URL"] = _test_database_url()
    env["DJANGO_SETTINGS_MODULE"] = "reposearch.settings.test"
    env["REPO_SEARCH_DATA_DIR"] = str(settings.REPO_SEARCH_DATA_DIR)
    # Small limits so the end-to-end tests can exceed them quickly.
    env["REPO_SEARCH_MAX_REPO_SIZE_MB"] = "2"
    env["REPO_SEARCH_CLONE_TIMEOUT_SECS"] = "6"
    env["REPO_SEARCH_EMBED_RETRY_DELAYS_SECS"] = "1,1"
    # As the fault stack's (tests/fault_stack.py): a killed pool child's repository lock frees
    # itself after 20 s, not 90 (the redelivered task waits that long; renewed every 7 s while
    # its holder lives), and a restarted worker looks for the jobs it lost after 3 s, not 15.
    env["REPO_SEARCH_LOCK_TTL_SECS"] = "20"
    env["REPO_SEARCH_RESUME_AFTER_START_DELAY_SECS"] = "3"
    env.pop("REPO_SEARCH_GIT_TOKEN", None)
    worker = WorkerProcess(env)
    worker.start()
    yield worker
    worker.stop()


@pytest.fixture
def client(db: None) -> Any:
    """Django's test client, signed in as an administrator (the UI's session)."""
    from django.test import Client

    from tests.accounts_support import make_account

    signed_in = Client()
    signed_in.force_login(make_account("admin"))
    return signed_in


@pytest.fixture
def anonymous_client() -> Any:
    """Django's test client with no account: for the tests of what anonymous requests get."""
    from django.test import Client

    return Client()


@pytest.fixture(autouse=True)
def _fresh_throttle_counters() -> Iterator[None]:
    """Throttle and sign-in counters (Django's cache) start empty in every test."""
    from django.core.cache import cache

    from search.retrieval import vector_stage

    cache.clear()
    vector_stage.clear_query_vectors()  # and the process's query embeddings: a test's model may be down
    yield


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Any:
    """Collect with the cyclic garbage collector paused. On CPython 3.11.7, ast.parse (which
    pytest's assertion rewriting runs on every test module) fails with "SystemError: AST
    constructor recursion depth mismatch" when another AST is built while it runs
    (python/cpython#106905, fixed in later 3.11 releases): a collection pass inside it can run a
    finalizer whose error report parses source (traceback's caret positions), and one CI run
    lost a worker that way."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.enable()


@pytest.hookimpl(trylast=True)  # after pytest-django's order (db tests, then transactional)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Within each module's run of tests, those that ask for no shared rows run first: they
    never see the rows a module-scoped ``rows_fixture`` keeps while it lives.

    Under pytest-xdist (``--dist loadfile``) a worker runs a module's tests one after the other,
    wherever pytest-django's order had put them, so a module's transactional tests would run
    while its shared rows are open: there a module's tests are taken together first (in the
    order above: rolled back, then transactional, then those that want shared rows)."""

    def wants_rows(item: pytest.Item) -> bool:
        return bool(ROW_FIXTURES & set(getattr(item, "fixturenames", ())))

    if os.environ.get("PYTEST_XDIST_WORKER"):
        modules: dict[Path, list[pytest.Item]] = {}
        for item in items:
            modules.setdefault(item.path, []).append(item)
        items[:] = [item for run in modules.values() for item in run]
    ordered: list[pytest.Item] = []
    start = 0
    for end in range(1, len(items) + 1):
        if end == len(items) or items[end].path != items[start].path:
            run = items[start:end]
            ordered += [i for i in run if not wants_rows(i)] + [i for i in run if wants_rows(i)]
            start = end
    items[:] = ordered
    record_tiers(items)


@pytest.fixture(autouse=True)
def _refuse_transactional_tests_inside_shared_rows(request: pytest.FixtureRequest) -> None:
    """A test that commits (``transactional_db``) would run inside the open transaction of a
    module's shared rows (tests/shared_rows.py) and truncate them: say so instead."""
    names = request.fixturenames
    marker = request.node.get_closest_marker("django_db")
    transactional = "transactional_db" in names or "live_server" in names
    transactional = transactional or bool(marker and marker.kwargs.get("transaction"))
    if transactional and open_shared_rows():
        pytest.fail(
            f"a transactional test runs while {open_shared_rows()} hold their rows in an open "
            "transaction: give it a module of its own"
        )
