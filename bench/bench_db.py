"""The benchmarks' own PostgreSQL: a persistent cluster in ``bench/corpora/pg`` (git-ignored).

Building a million-chunk corpus and its HNSW index takes a long while, so the cluster survives
between runs; each benchmark script starts it (or reuses it when it is already running), points
Django at it and runs the migrations. Settings differ from the embedded development stack on
purpose and are printed by the scripts: shared_buffers 2 GB (the HNSW index of 1 M x 384
vectors is ~2 GB; a search server would be given that memory).

    from bench_db import bench_database
    with bench_database() as url: ...     # Django is set up against it inside the block

Several checkouts each keep a cluster of their own: a script reuses its checkout's cluster on
the port it is running on (read from its ``postmaster.pid``), otherwise starts it on
``BENCH_PG_PORT`` or a free port; it stops the cluster on exit only if it started it, so one
script ending never stops a cluster another is measuring on.

Smoke runs (the test suite runs every benchmark at a tiny size so none can rot): with
``BENCH_DATABASE_URL`` set, that server is used as it is and no cluster is started, and
``BENCH_CORPORA_DIR`` moves manifests and caches out of ``bench/corpora``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPORA = Path(os.environ.get("BENCH_CORPORA_DIR") or ROOT / "bench" / "corpora")
EXTERNAL_DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "")
PG_ROOT = CORPORA / "pg"
PORT_FROM_ENV = int(os.environ.get("BENCH_PG_PORT") or 0)  # 0: the running one's, or a free one
SERVER_SETTINGS = {
    "shared_buffers": "2GB",
    "effective_cache_size": "8GB",
    "work_mem": "64MB",
    "max_parallel_maintenance_workers": "1",
    "random_page_cost": "1.1",
}

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _configure_server(postgres) -> bool:  # type: ignore[no-untyped-def]
    """Apply SERVER_SETTINGS with ALTER SYSTEM; True when a restart is needed."""
    import psycopg

    restart = False
    with psycopg.connect(postgres.superuser_url("postgres"), autocommit=True) as conn:
        for name, value in SERVER_SETTINGS.items():
            row = conn.execute(
                "SELECT setting, unit, context FROM pg_settings WHERE name = %s", (name,)
            ).fetchone()
            current = conn.execute(f"SHOW {name}").fetchone()
            if row is None or current is None or current[0].lower() == value.lower():
                continue
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            if row[2] == "postmaster":
                restart = True
        conn.execute("SELECT pg_reload_conf()")
    return restart


def _pgdata() -> Path:
    return PG_ROOT / "postgres"


def running_port() -> int | None:
    """The port this checkout's cluster is listening on, when it is running. (Nothing from
    ``reposearch`` here: importing it loads the settings before ``set_environment``.)"""
    try:
        lines = (_pgdata() / "postmaster.pid").read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
        os.kill(pid, 0)
    except PermissionError:  # alive, run by the cluster's own user
        return port
    except (OSError, ValueError, IndexError):  # no file, not a pid file, or no such process
        return None
    return port


def start_postgres(port: int):  # type: ignore[no-untyped-def]
    """Start (or reuse) the persistent cluster on ``port``, tuned with SERVER_SETTINGS."""
    from reposearch.embedded_stack import EmbeddedPostgres

    class PersistentPostgres(EmbeddedPostgres):
        def _prepare_user(self) -> None:
            super()._prepare_user()
            # As root, the parent class opens the data directory to group/others so the
            # unprivileged server user can reach it; an existing cluster then refuses to
            # start ("invalid permissions"). The directory itself must stay 0700.
            self.pgdata.chmod(0o700)

    PG_ROOT.mkdir(parents=True, exist_ok=True)
    postgres = PersistentPostgres(PG_ROOT, port)
    postgres.start()
    if _configure_server(postgres):
        postgres.stop()
        postgres.start()
    return postgres


def set_environment(port: int, redis_port: int | None = None) -> None:
    """Must run before anything imports ``reposearch``: its package import loads the settings."""
    credentials = _credentials_module()
    if EXTERNAL_DATABASE_URL:
        os.environ["DATABASE_URL"] = EXTERNAL_DATABASE_URL
    else:  # the cluster's passwords, generated on its first start
        creds, _created = credentials.ensure(PG_ROOT)
        os.environ["DATABASE_URL"] = credentials.postgres_url(
            "127.0.0.1", port, "reposearch", creds
        )
    if redis_port:
        creds, _created = credentials.ensure(CORPORA / "redis")
        os.environ["REDIS_URL"] = credentials.redis_url("127.0.0.1", redis_port, creds)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reposearch.settings.base")
    os.environ.setdefault("REPO_SEARCH_DATA_DIR", str(CORPORA / "data"))
    os.environ.setdefault("REPO_SEARCH_ALLOW_LOCAL_PATHS", "1")
    # The synthetic corpus (1 M chunks) plus the eval corpora and copies of Django can pass the
    # default cap (2 M vectors); benchmarks measure speed, not the cap.
    os.environ.setdefault("REPO_SEARCH_MAX_VECTOR_ENTRIES", "5000000")


def _credentials_module():  # type: ignore[no-untyped-def]
    """``reposearch.embedded_credentials`` without importing the package (that loads settings)."""
    import importlib.util

    path = ROOT / "reposearch" / "embedded_credentials.py"
    spec = importlib.util.spec_from_file_location("_bench_embedded_credentials", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def setup_django() -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


@contextlib.contextmanager
def bench_database(*, keep_running: bool = False, with_redis: bool = False) -> Iterator[str]:
    """The persistent cluster with Django set up on it (and a throwaway Redis when asked).

    ``keep_running`` leaves the cluster running. Otherwise it is stopped on the way out when
    this call started it and no other client is connected to it (another script may be
    measuring on it); a cluster that was already running is never stopped here.
    """
    redis_port = _free_port() if with_redis else None
    already = None if EXTERNAL_DATABASE_URL else running_port()
    port = already or PORT_FROM_ENV or _free_port()
    set_environment(port, redis_port)
    postgres = None if EXTERNAL_DATABASE_URL else start_postgres(port)
    keep_running = keep_running or already is not None
    redis = None
    try:
        if redis_port:
            from reposearch.embedded_stack import EmbeddedRedis

            redis = EmbeddedRedis(CORPORA / "redis", redis_port)
            redis.start()
        setup_django()
        yield postgres.url() if postgres is not None else EXTERNAL_DATABASE_URL
    finally:
        if redis is not None:
            redis.stop()
        if not keep_running:
            from django.db import connections

            connections.close_all()
            if postgres is not None and not _others_connected(postgres):
                postgres.stop()


def _others_connected(postgres) -> bool:  # type: ignore[no-untyped-def]
    """Whether a client other than this check is connected to the cluster."""
    import psycopg

    with psycopg.connect(postgres.superuser_url("postgres"), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
    return bool(row and row[0])
