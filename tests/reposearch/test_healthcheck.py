"""The container healthchecks (``python -m reposearch.healthcheck``) against real servers."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reposearch.healthcheck", "--timeout", "3", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_web_is_healthy_when_it_answers_health(live_server) -> None:
    result = _run("web", "--url", f"{live_server.url}/api/health")
    assert result.returncode == 0, result.stderr  # 200 or 503: Django answered


def test_web_is_unhealthy_when_nothing_listens() -> None:
    result = _run("web", "--url", f"http://127.0.0.1:{_closed_port()}/api/health")
    assert result.returncode == 1 and "does not answer" in result.stderr


@pytest.mark.django_db
def test_a_live_worker_answers_its_healthcheck(celery_worker_process) -> None:
    from reposearch.celery import app

    (reply,) = app.control.ping(timeout=2.0)
    name = next(iter(reply))
    assert _run("worker", "--name", name).returncode == 0
    missing = _run("worker", "--name", "nobody@nowhere")
    assert missing.returncode == 1
    assert missing.stderr.startswith("unhealthy: worker nobody@nowhere did not answer a ping;")
    # A mistyped prefix names the workers that answered, so the right name is plain to see.
    typo = _run("worker", "--prefix", "gti")
    assert typo.returncode == 1
    line = typo.stderr.strip()
    assert f"worker gti@{socket.gethostname()} did not answer a ping" in line
    assert "workers that did: " in line and name in line.rsplit("workers that did: ", 1)[1]
