"""Two workers never write the same clone: a fetch that lost its claim writes nothing.

Two real claim holders, each a process of its own running the fetch stage for one job (as two
worker hosts would once the first one's repository lock ran out while it was paused): the first
is frozen (SIGSTOP) mid-fetch, the branch moves on, the second takes the job over and fetches;
then the first is thawed and finishes its fetch. Its clone is never moved into place and it
records nothing: the clone directory, the job's commit and its claim stay the second's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from dulwich.repo import Repo

from indexing.clone_paths import remove_stale_staging, repository_dir
from indexing.models import IndexJob, JobState, Repository
from indexing.services.stages.clone_swap import (
    copy_for_update,
    move_into_place,
    staging_area,
    staging_dir,
)
from tests.conftest import ROOT, _test_database_url
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo

pytestmark = pytest.mark.timeout(180)

FETCH = """
import sys
import django
django.setup()
from indexing.services.stages.fetch import run_fetch
from indexing.services.stages.run_context import JobCancelled
try:
    print("returned", run_fetch(int(sys.argv[1])), flush=True)
except JobCancelled as error:
    print("fenced:", error, flush=True)
"""


def _fetch_process(job_id: int) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=_test_database_url(),
        DJANGO_SETTINGS_MODULE="reposearch.settings.test",
        REPO_SEARCH_DATA_DIR=str(settings.REPO_SEARCH_DATA_DIR),
        REPO_SEARCH_ALLOW_PRIVATE_HOSTS="1",
        REPO_SEARCH_CLONE_TIMEOUT_SECS="120",
    )
    return subprocess.Popen(
        [sys.executable, "-c", FETCH, str(job_id)], cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[tuple[Repo, GitHttpServer]]:
    repo = init_bare_repo(str(tmp_path / "remote.git"))
    commit_files(repo, {"app.py": "def first():\n    return 1\n"}, message="first")
    with GitHttpServer({"team/app.git": repo}) as server:
        yield repo, server


def _staging(target: Path) -> list[Path]:
    return sorted(target.parent.glob(f"{target.name}.fetch-*")) if target.parent.exists() else []


@pytest.mark.django_db(transaction=True)
def test_a_paused_fetch_that_lost_its_claim_never_swaps_its_clone_in(
    remote: tuple[Repo, GitHttpServer],
) -> None:
    repo, server = remote
    repository = Repository.objects.create(name="team/app", url=server.url("team/app.git"))
    job = IndexJob.objects.create(repository=repository, state=JobState.QUEUED)
    target = repository_dir(repository.pk)

    server.stall_s = 3  # the first fetch is caught waiting for the server
    first = _fetch_process(job.pk)
    deadline = time.monotonic() + 60
    while not any((path / "HEAD").exists() for path in _staging(target)):  # waiting for the server
        assert first.poll() is None, first.communicate()[0]
        assert time.monotonic() < deadline, "the first fetch never started"
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGSTOP)  # a worker host that stops answering mid-fetch
    try:
        paused_claim = IndexJob.objects.get(pk=job.pk).stage_started_at
        moved_on = commit_files(
            repo, {"app.py": "def second():\n    return 2\n"}, message="second",
            parent=repo.refs[b"refs/heads/main"],
        )  # fmt: skip
        server.stall_s = 0

        second = _fetch_process(job.pk)  # the job resumed on another host
        output = second.communicate(timeout=120)[0]
        assert "returned True" in output, output
    finally:
        os.kill(first.pid, signal.SIGCONT)
    taken = IndexJob.objects.get(pk=job.pk)
    assert taken.stage_started_at != paused_claim and taken.commit == moved_on.decode()
    clone = (target.stat().st_ino, (target / "refs" / "heads" / "main").read_text())

    output = first.communicate(timeout=120)[0]  # thawed: it finishes its fetch, then the swap

    assert "fenced:" in output and "taken over" in output, output
    assert (target.stat().st_ino, (target / "refs" / "heads" / "main").read_text()) == clone
    assert clone[1].strip() == moved_on.decode()
    after = IndexJob.objects.get(pk=job.pk)
    assert (after.state, after.commit, after.stage_started_at, after.attempts, after.error) == (
        JobState.CLONING,
        taken.commit,
        taken.stage_started_at,
        taken.attempts,
        "",
    )
    assert _staging(target) == []  # the fenced run removed its own staging directory and lock


def test_a_later_run_removes_what_a_dead_run_left_but_not_a_live_runs_staging(
    tmp_path: Path,
) -> None:
    target = tmp_path / "repos" / "r2"
    with staging_area(target) as live:
        live.mkdir()
        dead = staging_dir(target)
        (dead / "objects").mkdir(parents=True)  # a run SIGKILLed mid-fetch: no lock held
        (tmp_path / "repos" / f"{dead.name}.lock").write_text("")
        assert remove_stale_staging(target) == [dead]
        assert live.exists() and not dead.exists()
    assert (
        sorted(tmp_path.joinpath("repos").iterdir()) == []
    )  # the live run cleaned up after itself


def test_an_update_copy_shares_the_objects_and_the_swap_replaces_the_clone(
    tmp_path: Path,
) -> None:
    target = tmp_path / "repos" / "r1"
    target.parent.mkdir()
    repo = init_bare_repo(str(target))
    commit_files(repo, {"a.py": "A = 1\n"}, message="one")
    objects = [p for p in (target / "objects").rglob("*") if p.is_file()]
    staging = staging_dir(target)

    copy_for_update(target, staging)
    for path in objects:  # hard links: an update copy costs no object bytes
        assert (staging / path.relative_to(target)).stat().st_ino == path.stat().st_ino
    assert (staging / "HEAD").stat().st_ino != (target / "HEAD").stat().st_ino
    commit_files(Repo(str(staging)), {"a.py": "A = 2\n"}, message="two",
                 parent=repo.refs[b"refs/heads/main"])  # fmt: skip
    updated = (staging / "refs" / "heads" / "main").read_text()
    assert (target / "refs" / "heads" / "main").read_text() != updated  # the live clone as it was

    move_into_place(staging, target)
    assert (target / "refs" / "heads" / "main").read_text() == updated
    assert not staging.exists() and sorted(p.name for p in target.parent.iterdir()) == ["r1"]
