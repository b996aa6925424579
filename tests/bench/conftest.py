"""Fixtures of the benchmark smoke runs: databases of their own on the test server, tiny trees."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from tests.bench.script_runs import run_script, server_url


@contextmanager
def _scratch_database(prefix: str) -> Iterator[str]:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server_url(name)
    finally:
        with psycopg.connect(server_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def bench_database() -> Iterator[str]:
    """An empty database (``BENCH_DATABASE_URL``: the scripts migrate it themselves)."""
    with _scratch_database("bench_smoke") as url:
        yield url


@pytest.fixture(scope="session")
def migrated_database() -> Iterator[str]:
    """A migrated database for the scripts that use ``DATABASE_URL`` as ``manage.py`` does
    (never the development stack's: they add and delete repositories)."""
    with _scratch_database("bench_smoke_app") as url:
        run_script("manage.py", "migrate", "-v0", env={"DATABASE_URL": url})
        yield url


@pytest.fixture
def source_tree(tmp_path: Path) -> Path:
    """A tiny package to clone and index: its top folder is stripped, as an sdist's is."""
    package = tmp_path / "source" / "tinypkg-1.0"
    package.mkdir(parents=True)
    for number in range(3):
        (package / f"module{number}.py").write_text(
            f"def handler_{number}(request):\n    return request.get('value', {number})\n"
        )
    (package / "README.md").write_text("# tinypkg\n\nA package for smoke runs.\n")
    return package.parent
