"""The embedded PostgreSQL of ``make up`` starts, stops and starts again on the same data."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import psycopg
import pytest

from reposearch.embedded_services import EmbeddedPostgres, EmbeddedRedis, free_port, port_open


@pytest.fixture
def data_root(pg_home: Path) -> Path:
    root = pg_home / "data"
    root.mkdir()
    return root


def test_postgres_restarts_on_its_own_data_and_keeps_it(data_root: Path) -> None:
    postgres = EmbeddedPostgres(data_root, free_port())
    postgres.start()
    try:
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (value int)")
            conn.execute("INSERT INTO kept VALUES (42)")
        postgres.stop()
        assert not port_open(postgres.port)
        mode = stat.S_IMODE(postgres.pgdata.stat().st_mode)
        assert mode & 0o077 == 0, oct(mode)  # PostgreSQL refuses to start otherwise

        postgres.start()  # a second `make up`
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            assert conn.execute("SELECT value FROM kept").fetchone() == (42,)
            version = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            )
            assert version.fetchone() is not None
    finally:
        postgres.stop()


def test_a_stale_postmaster_pid_after_a_crash_is_recovered(data_root: Path) -> None:
    postgres = EmbeddedPostgres(data_root, free_port())
    postgres.start()
    pid = int((postgres.pgdata / "postmaster.pid").read_text().splitlines()[0])
    os.kill(pid, signal.SIGKILL)  # a crash: postmaster.pid stays behind
    for _ in range(100):
        if not port_open(postgres.port):
            break
    assert (postgres.pgdata / "postmaster.pid").exists()
    try:
        postgres.start()
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        postgres.stop()


def test_redis_left_running_by_an_earlier_run_is_replaced(data_root: Path) -> None:
    first = EmbeddedRedis(data_root, free_port())
    first.start()
    leftover = first.process
    assert leftover is not None
    second = EmbeddedRedis(data_root, free_port())  # `make up` again after a kill -9
    second.start()
    try:
        leftover.wait(10)
        assert leftover.returncode is not None
        assert port_open(second.port)
    finally:
        second.stop()


def test_stop_works_when_pg_ctl_can_no_longer_reach_the_data_directory(tmp_path: Path) -> None:
    # PostgreSQL runs as an unprivileged user; a parent directory made private after the start
    # (another pytest session resets /tmp/pytest-of-root to 0700) makes `pg_ctl stop` fail.
    private = tmp_path / "private"
    private.mkdir()
    postgres = EmbeddedPostgres(private / "data", free_port())
    postgres.start()
    pid = postgres.running_pid()
    assert pid is not None
    if postgres.run_as is None:
        postgres.stop()
        pytest.skip("PostgreSQL runs as this user here: no directory it could be locked out of")
    private.chmod(0o700)
    try:
        postgres.stop()
        assert not port_open(postgres.port)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        private.chmod(0o755)
        postgres.stop()
