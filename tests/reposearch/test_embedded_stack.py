"""The embedded PostgreSQL of ``make up`` starts, stops and starts again on the same data."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from reposearch.embedded_services import (
    EmbeddedPostgres,
    EmbeddedRedis,
    free_port,
    pid_alive,
    port_open,
    wait_until,
)


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
    assert wait_until(lambda: not pid_alive(pid) and not port_open(postgres.port), 30)
    assert (postgres.pgdata / "postmaster.pid").exists()
    try:
        postgres.start()
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        postgres.stop()


def test_make_up_right_after_a_crash_waits_for_the_dying_server(data_root: Path) -> None:
    postgres = EmbeddedPostgres(data_root, free_port())
    postgres.start()
    pid = int((postgres.pgdata / "postmaster.pid").read_text().splitlines()[0])
    os.kill(pid, signal.SIGKILL)  # no wait: the killed postmaster may still hold pid and port
    try:
        postgres.start()
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            assert conn.execute("SELECT pg_backend_pid() <> 0").fetchone() == (True,)
        new_pid = int((postgres.pgdata / "postmaster.pid").read_text().splitlines()[0])
        assert new_pid != pid
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


def test_stop_works_when_pg_ctl_can_no_longer_reach_the_data_directory(pg_home: Path) -> None:
    # PostgreSQL runs as an unprivileged user; a parent directory made private after the start
    # (another pytest session resets /tmp/pytest-of-root to 0700) makes `pg_ctl stop` fail.
    # (pg_home, not tmp_path: under pytest-xdist the socket's path would pass 107 bytes.)
    private = pg_home / "private"
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


def test_a_sigterm_to_the_test_command_stops_its_services_and_leaves_nothing(
    pg_home: Path,
) -> None:
    """``make test`` cancelled with SIGTERM (a CI job stopped, ``kill``): the command gets the
    signal, then the PostgreSQL and Redis it ran beside stop and their files go."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["TMPDIR"] = str(pg_home)  # where `run` makes its throwaway data directory
    shows = (
        "import os, time; "
        "print('running', os.getpid(), os.environ['DATABASE_URL'], os.environ['REDIS_URL'],"
        " flush=True); "
        "time.sleep(300)"
    )
    stack = subprocess.Popen(
        [sys.executable, "-m", "reposearch.embedded_stack", "run", "--", sys.executable, "-c", shows],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert stack.stdout is not None
        line = ""
        while not line.startswith("running "):  # after the stack's own "starting ..." lines
            line = stack.stdout.readline()
            assert line, "the command never ran"
        _running, pid, database_url, redis_url = line.split()
        ports = [int(url.rsplit(":", 1)[1].split("/")[0]) for url in (database_url, redis_url)]
        assert all(port_open(port) for port in ports)
        assert [p.name for p in pg_home.iterdir() if p.name.startswith("reposearch-stack-")]

        stack.send_signal(signal.SIGTERM)
        assert stack.wait(60) == 128 + signal.SIGTERM  # the command's end, as a shell says it
    finally:
        if stack.poll() is None:
            stack.kill()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)  # the command got the signal and ended
    assert not any(port_open(port) for port in ports)  # PostgreSQL and Redis stopped
    assert not [p for p in pg_home.iterdir() if p.name.startswith("reposearch-stack-")]
