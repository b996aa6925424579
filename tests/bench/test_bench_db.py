"""The benchmarks' persistent cluster: two scripts of one checkout share it, and one ending
never stops it under the other (``bench/bench_db.py``, a real cluster in a temporary
``BENCH_CORPORA_DIR``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A benchmark script's shape: open the bench database, say on which port, run a query when told.
SCRIPT = """
import sys
sys.path.insert(0, "bench")
from bench_db import bench_database
with bench_database():
    from django.db import connection
    print("port", connection.settings_dict["PORT"], flush=True)
    for line in sys.stdin:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 40 + 2")
            print("answer", cursor.fetchone()[0], flush=True)
"""


def _script(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _said(process: subprocess.Popen[str], what: str) -> str:
    """The next thing the script says about ``what`` (the cluster's start-up lines aside)."""
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(what + " "):
            return line.split()[1]
    raise AssertionError(f"the script ended without saying its {what}")


def _running_port(corpora: Path) -> int | None:
    try:
        return int((corpora / "pg" / "postgres" / "postmaster.pid").read_text().splitlines()[3])
    except (OSError, IndexError, ValueError):
        return None


def test_a_script_ending_leaves_the_cluster_to_the_one_still_measuring(
    pg_home: Path,
) -> None:
    corpora = pg_home / "corpora"
    env = {**os.environ, "BENCH_CORPORA_DIR": str(corpora)}
    for name in ("BENCH_DATABASE_URL", "BENCH_PG_PORT", "DATABASE_URL"):
        env.pop(name, None)
    first = _script(env)
    try:
        port = _said(first, "port")
        assert _running_port(corpora) == int(port)

        second = _script(env)  # reuses the running cluster on its port, whatever it is
        assert _said(second, "port") == port
        second.communicate("\n", timeout=120)
        assert second.returncode == 0

        first.stdin.write("\n")  # type: ignore[union-attr]
        first.stdin.flush()  # type: ignore[union-attr]
        assert _said(first, "answer") == "42"  # its server is still there
        first.communicate("", timeout=120)
        assert first.returncode == 0
    finally:
        if first.poll() is None:
            first.kill()
    # The one that started it, with nobody else connected, stopped it on the way out.
    pid_file = corpora / "pg" / "postgres" / "postmaster.pid"
    assert not pid_file.exists()
