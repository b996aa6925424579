"""Running a benchmark script as a person would: its own process from the checkout's root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def server_url(database: str) -> str:
    """The URL of ``database`` on the test's PostgreSQL server."""
    db = connection.settings_dict
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db["PORT"] else ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgresql://{db['USER']}{password}@{host}{port}/{database}"


def run_script(
    script: str, *args: str, env: dict[str, str] | None = None, drop: tuple[str, ...] = ()
) -> str:
    """Run ``bench/<script>`` (``eval/levers.py`` for one under ``bench/eval``), or ``manage.py``;
    check it exits 0 and return what it printed (stdout, then stderr)."""
    path = ROOT / script if script == "manage.py" else ROOT / "bench" / script
    environment = {k: v for k, v in os.environ.items() if k not in drop}
    result = subprocess.run(
        [sys.executable, str(path), *args],
        cwd=ROOT,
        env={**environment, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{script} exited {result.returncode}:\n{output[-4000:]}"
    return output
