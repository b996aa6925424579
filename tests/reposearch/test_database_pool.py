"""Database connections are pooled per process unless REPO_SEARCH_DB_POOL_SIZE=0."""

from __future__ import annotations

import subprocess
import sys

from reposearch.settings.env import database_config


def test_a_pool_size_gives_a_psycopg_pool_and_no_persistent_connections() -> None:
    pooled = database_config("postgresql://u:p@db:5432/name", 16)
    assert pooled["CONN_MAX_AGE"] == 0  # Django refuses a pool with persistent connections
    assert pooled["OPTIONS"]["pool"]["max_size"] == 16  # type: ignore[index]
    plain = database_config("postgresql://u:p@db:5432/name", 0)
    assert "pool" not in plain["OPTIONS"] and plain["CONN_MAX_AGE"] == 60  # type: ignore[operator]


def test_the_default_settings_pool_and_the_pool_module_is_installed() -> None:
    code = (
        "import django; django.setup(); import psycopg_pool;"
        "from django.conf import settings as s; print(s.DATABASES['default']['OPTIONS']['pool'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"DJANGO_SETTINGS_MODULE": "reposearch.settings.base", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'max_size': 16" in out.stdout
