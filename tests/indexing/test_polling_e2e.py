"""End to end: a commit pushed to a served repository becomes searchable with nobody asking.

Real processes: the Celery worker of the session fixture and a ``celery beat`` started here
(ticking every second); the repository is served over HTTP by dulwich in the test process.
After the first index, the only request the test makes is to set the poll interval.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexing.models import IndexJob, Repository
from reposearch.processes import beat_command
from tests.accounts_support import token_client
from tests.conftest import ROOT, WorkerProcess
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def beat(celery_worker_process: WorkerProcess, tmp_path: Path) -> Iterator[subprocess.Popen]:
    env = dict(celery_worker_process.env)
    env["REPO_SEARCH_POLL_TICK_SECS"] = "1"
    command = beat_command(
        str(tmp_path / "beat-schedule"), program=(sys.executable, "-m", "celery")
    )
    log = open(tmp_path / "beat.log", "wb")  # noqa: SIM115 - the child process owns it
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    yield process
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def wait_for(predicate, seconds: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_pushed_commit_is_polled_reindexed_and_searchable_with_no_request(
    celery_worker_process, beat, tmp_path
) -> None:
    source = init_bare_repo(str(tmp_path / "demo.git"))
    first = commit_files(source, {"src/app.py": "def greet(name):\n    return name\n"})
    api = token_client()
    with GitHttpServer({"team/demo.git": source}) as server:
        created = api.post("/api/repos", {"url": server.url("team/demo.git")}, format="json")
        assert created.status_code == 202, created.json()
        repository_id = created.json()["id"]
        job = wait_for(
            lambda: IndexJob.objects.filter(repository_id=repository_id, state="done").first(),
            180,
            "the first index",
        )
        assert job.commit == first.decode()
        changed = api.patch(f"/api/repos/{repository_id}", {"poll_interval_secs": 1}, format="json")
        assert changed.status_code == 200 and changed.json()["poll_interval_secs"] == 1

        # A first check finds nothing new: no pack is fetched, nothing is queued.
        wait_for(
            lambda: Repository.objects.filter(
                pk=repository_id, last_polled_at__isnull=False
            ).first(),
            60,
            "a first poll",
        )
        shown = api.get(f"/api/repos/{repository_id}").json()
        assert shown["remote_tip"] == first.decode() and shown["behind"] is False
        assert IndexJob.objects.filter(repository_id=repository_id).count() == 1
        assert not [r for r in server.requests if r.startswith("POST")][1:]  # the clone's only

        pushed = commit_files(
            source,
            {"src/app.py": "def greet(name):\n    return name\n", "src/late.py": LATE},
            parent=first,
            message="pushed",
        )
        reindexed = wait_for(
            lambda: IndexJob.objects.filter(
                repository_id=repository_id, state="done", commit=pushed.decode()
            ).first(),
            180,
            "the re-index of the pushed commit",
        )
        assert reindexed.kind == "incremental"

        found = api.post(
            "/api/search", {"query": "reconcile_late_arrivals", "use_vector": False}, format="json"
        ).json()
        top = found["results"][0]
        assert top["symbol"] == "reconcile_late_arrivals"
        assert (top["commit"], top["branch"]) == (pushed.decode(), "main")
        # Read while the server is still up: beat polls every second, and a poll caught by the
        # server's shutdown records that failure (CI at stop 22: "fetch ... (AttributeError)").
        shown = api.get(f"/api/repos/{repository_id}").json()
        assert shown["last_indexed_commit"] == pushed.decode()
        assert shown["behind"] is False and shown["poll_error"] == ""


LATE = "def reconcile_late_arrivals(rows):\n    return sorted(rows)\n"


def test_a_signed_push_webhook_makes_the_commit_searchable(celery_worker_process, tmp_path) -> None:
    import hashlib
    import hmac
    import json

    source = init_bare_repo(str(tmp_path / "hooked.git"))
    first = commit_files(source, {"src/app.py": "def greet(name):\n    return name\n"})
    api = token_client()
    with GitHttpServer({"team/hooked.git": source}) as server:
        created = api.post("/api/repos", {"url": server.url("team/hooked.git")}, format="json")
        repository_id = created.json()["id"]
        wait_for(
            lambda: IndexJob.objects.filter(repository_id=repository_id, state="done").first(),
            180,
            "the first index",
        )
        api.patch(f"/api/repos/{repository_id}", {"poll_interval_secs": 0}, format="json")
        hook = api.get(f"/api/repos/{repository_id}/webhook").json()
        pushed = commit_files(
            source,
            {"src/app.py": "def greet(name):\n    return name\n", "src/hooked.py": HOOKED},
            parent=first,
        )
        body = json.dumps(
            {"ref": "refs/heads/main", "before": first.decode(), "after": pushed.decode()}
        ).encode()
        signature = hmac.new(hook["secret"].encode(), body, hashlib.sha256).hexdigest()
        answer = api.generic(
            "POST",
            hook["url"].removeprefix("http://testserver"),
            body,
            content_type="application/json",
            HTTP_X_GITHUB_EVENT="push",
            HTTP_X_HUB_SIGNATURE_256="sha256=" + signature,
        )
        assert answer.status_code == 202 and answer.json()["status"] == "queued", answer.json()
        job = wait_for(
            lambda: IndexJob.objects.filter(pk=answer.json()["job_id"], state="done").first(),
            180,
            "the re-index the webhook queued",
        )
        assert job.commit == pushed.decode()

    found = api.post(
        "/api/search", {"query": "webhook_delivered_function", "use_vector": False}, format="json"
    ).json()
    assert found["results"][0]["symbol"] == "webhook_delivered_function"
    assert found["results"][0]["commit"] == pushed.decode()


HOOKED = "def webhook_delivered_function():\n    return 1\n"
