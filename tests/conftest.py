"""Shared fixtures: a real Celery worker process on the test database, factories."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def _test_database_url() -> str:
    db = connection.settings_dict
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgresql://{db['USER']}@{host}{port}/{db['NAME']}"


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker) -> Iterator[subprocess.Popen[bytes]]:
    """A real ``celery worker`` process consuming every queue, connected to the test database."""
    from reposearch.celery import app

    env = dict(os.environ)
    env["DATABASE_URL"] = _test_database_url()
    env["DJANGO_SETTINGS_MODULE"] = "reposearch.settings.test"
    env["REPO_SEARCH_DATA_DIR"] = str(settings.REPO_SEARCH_DATA_DIR)
    # Small limits so the end-to-end tests can exceed them quickly.
    env["REPO_SEARCH_MAX_REPO_SIZE_MB"] = "2"
    env["REPO_SEARCH_CLONE_TIMEOUT_SECS"] = "6"
    env["REPO_SEARCH_EMBED_RETRY_DELAYS_SECS"] = "1,1"
    name = f"test-{uuid.uuid4().hex[:8]}@%h"
    (ROOT / ".pytest_cache").mkdir(exist_ok=True)
    log = open(ROOT / ".pytest_cache" / "celery-worker.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "reposearch",
            "worker",
            "-Q",
            "git,index,embed,default",
            "--concurrency",
            "2",
            "-n",
            name,
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"celery worker exited with {process.returncode}; see {log.name}")
        if app.control.ping(timeout=1.0):
            break
    else:
        process.kill()
        raise RuntimeError("celery worker did not answer a ping within 90 s")
    yield process
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()
