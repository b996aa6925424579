"""Two reconciles of one repository file never interleave, and a file brings a whole set of
repositories up end to end (a real worker indexes them; they answer searches).

The concurrency test stalls a first reconcile inside its transaction (holding the advisory lock
``add_repository`` takes, so its first add waits), edits the file, starts a second one, and
checks the second waited and planned against what the first committed.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections

from accounts.models import AuditEntry
from indexing.models import IndexJob, Repository
from indexing.repository_sets.reconcile import SyncResult, sync_repository_file
from tests.accounts_support import token_client
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo

pytestmark = pytest.mark.django_db(transaction=True)

A = "http://127.0.0.1:9/team/alpha.git"
B = "http://127.0.0.1:9/team/beta.git"
C = "http://127.0.0.1:9/team/gamma.git"


def waiting_advisory_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        return int(cursor.fetchone()[0])


def wait_until(predicate: Any, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Reconcile(threading.Thread):
    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.result: SyncResult | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = sync_repository_file(self.path)
        except BaseException as error:  # reported by the test
            self.error = error
        finally:
            connections.close_all()


def test_a_file_edited_while_a_reconcile_runs_is_applied_after_it_not_beside_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "repos.yaml"
    path.write_text(f"prune: true\nrepositories:\n  - url: {A}\n  - url: {B}\n")
    with connection.cursor() as cursor:  # stall every add until released
        cursor.execute("SELECT pg_advisory_lock(hashtext('reposearch:add_repository'))")
    first = Reconcile(path)
    first.start()
    wait_until(lambda: waiting_advisory_locks() == 1, "the first reconcile to reach its add")

    path.write_text(f"prune: true\nrepositories:\n  - url: {A}\n    name: alpha-2\n  - url: {C}\n")
    second = Reconcile(path)
    second.start()
    wait_until(lambda: waiting_advisory_locks() == 2, "the second reconcile to wait")
    assert not Repository.objects.exists()  # the first has not committed anything yet

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(hashtext('reposearch:add_repository'))")
    first.join(60)
    second.join(60)
    assert first.error is None and second.error is None, (first.error, second.error)
    assert first.result is not None and second.result is not None
    assert [(c.kind, c.url) for c in first.result.plan.changes] == [("add", A), ("add", B)]
    # Planned from what the first committed: A exists (renamed), B goes, C is new.
    assert sorted((c.kind, c.url) for c in second.result.plan.changes) == [
        ("add", C), ("remove", B), ("update", A)
    ]  # fmt: skip
    assert sorted(Repository.objects.values_list("url", "name")) == [
        (A, "alpha-2"), (C, "team/gamma")
    ]  # fmt: skip
    actions = sorted(
        AuditEntry.objects.filter(action__startswith="repos_file").values_list("action", flat=True)
    )
    assert actions == ["repos_file.add"] * 3 + ["repos_file.remove", "repos_file.update"]


@pytest.mark.e2e
def test_a_repository_file_brings_up_a_set_of_searchable_repositories(
    celery_worker_process: Any, tmp_path: Path
) -> None:
    served = {}
    for name, marker in (("alpha", "alpha_marker_function"), ("beta", "beta_marker_function")):
        repo = init_bare_repo(str(tmp_path / f"{name}.git"))
        commit_files(repo, {f"src/{name}.py": f"def {marker}(x):\n    return x\n"})
        served[f"team/{name}.git"] = repo
    with GitHttpServer(served) as server:
        path = tmp_path / "repos.yaml"
        path.write_text(
            "repositories:\n" + "".join(f"  - url: {server.url(name)}\n" for name in served)
        )
        sync_repository_file(path)
        ids = list(Repository.objects.values_list("pk", flat=True))
        assert len(ids) == 2
        wait_until(
            lambda: IndexJob.objects.filter(repository_id__in=ids, state="done").count() == 2,
            "both repositories to be indexed",
            seconds=240,
        )
    api = token_client("read")
    for marker in ("alpha_marker_function", "beta_marker_function"):
        found = api.post("/api/search", {"query": marker, "use_vector": False}, format="json")
        assert found.json()["results"][0]["symbol"] == marker
