"""``manage.py doctor``: planted drift between the database and the data directory is found,
reported, and repaired only with ``--repair``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from indexing.clone_paths import lock_of
from indexing.models import (
    Chunk,
    ChunkEmbedding,
    EmbeddingVector,
    IndexJob,
    JobKind,
    JobState,
    Repository,
    RepositoryStatus,
)
from indexing.services.doctor import examine
from indexing.services.recovery import TaskCensus
from indexing.services.repositories import delete_repository
from indexing.tasks.maintenance import repair_drift
from search.executor import SearchExecutor, SearchRequest
from tests import factories
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db
SOURCE = ["def parse_http_header(line):\n    return line.split(':', 1)"]


@pytest.fixture
def data_dir(settings, tmp_path: Path) -> Path:
    settings.REPO_SEARCH_DATA_DIR = str(tmp_path)
    (tmp_path / "repos").mkdir()
    return tmp_path


def _healthy(name: str, data_dir: Path, source: list[str] = SOURCE, **kwargs: Any) -> Repository:
    url = f"https://example.org/{name}.git"
    repository = factories.indexed_repository(name, source, url=url, **kwargs)
    clone = data_dir / "repos" / str(repository.pk)
    clone.mkdir()
    (clone / "HEAD").write_text("ref: refs/heads/main\n")
    return repository


def _kinds(report) -> list[str]:  # type: ignore[no-untyped-def]
    return [finding.kind for finding in report.findings]


def test_a_healthy_install_has_no_drift(data_dir: Path) -> None:
    _healthy("d/ok", data_dir)
    out = io.StringIO()
    call_command("doctor", stdout=out)
    assert out.getvalue().strip() == "no drift found"


def test_a_clone_without_a_repository_is_found_then_removed(data_dir: Path) -> None:
    orphan = data_dir / "repos" / str(uuid.uuid4())
    (orphan / "objects").mkdir(parents=True)
    (data_dir / "repos" / "README").write_text("not a clone")  # not ours: left alone

    assert _kinds(examine()) == ["orphan_clone"]
    assert orphan.exists()  # finding is not repairing
    report = examine(repair=True)
    assert report.findings[0].repaired and not orphan.exists()
    assert (data_dir / "repos" / "README").exists()
    assert _kinds(examine()) == []


def test_an_indexed_repository_without_its_clone_gets_a_fresh_clone(data_dir: Path) -> None:
    repository = factories.indexed_repository("d/m", SOURCE, url="https://example.org/d/m.git")

    (finding,) = examine().findings
    assert (finding.kind, finding.repository) == ("missing_clone", "d/m")
    examine(repair=True)
    job = IndexJob.objects.get(repository=repository)
    assert (job.state, job.kind) == (JobState.QUEUED, JobKind.INCREMENTAL)


def test_generations_left_behind_are_deleted_and_the_live_one_keeps_answering(
    data_dir: Path,
) -> None:
    repository = _healthy("d/g", data_dir)
    next_file = factories.SourceDoc("a.py", [factories.Piece("def leftover(): pass", "leftover")])
    factories.index_generation(repository, [next_file], swap=False)  # generation 2, not live

    (finding,) = examine().findings
    assert finding.kind == "stale_generation" and "1 chunks" in finding.detail
    examine(repair=True)
    assert not Chunk.objects.filter(repository=repository, generation=2).exists()
    assert Chunk.objects.filter(repository=repository, generation=1).count() == 1
    hits = SearchExecutor().run(SearchRequest(query="parse_http_header", use_vector=False)).hits
    assert [hit.symbol for hit in hits] == ["s0"]


def test_a_repository_without_full_text_statistics_gets_them_rebuilt(data_dir: Path) -> None:
    # As after the upgrade to search.0005, which drops lists of the old record format.
    # (a tiny repository's lists are all short: packed in TermBucket rows)
    from search.models import ChunkFacetStat, TermBucket

    repository = _healthy("d/s", data_dir)
    assert TermBucket.objects.filter(repository=repository).exists()
    TermBucket.objects.filter(repository=repository).delete()
    ChunkFacetStat.objects.filter(repository=repository).delete()

    (finding,) = examine().findings
    assert (finding.kind, finding.repository, finding.repaired) == (
        "missing_search_stats",
        "d/s",
        False,
    )
    assert not TermBucket.objects.filter(repository=repository).exists()
    (finding,) = examine(repair=True).findings
    assert finding.repaired and "rebuilt" in finding.action
    assert TermBucket.objects.filter(repository=repository).exists()
    assert _kinds(examine()) == []
    hits = SearchExecutor().run(SearchRequest(query="parse_http_header", use_vector=False)).hits
    assert [hit.symbol for hit in hits] == ["s0"]


def test_the_next_generation_of_a_running_job_is_not_drift(data_dir: Path) -> None:
    repository = _healthy("d/r", data_dir)
    IndexJob.objects.create(
        repository=repository, state=JobState.STORING, heartbeat_at=timezone.now()
    )
    next_file = factories.SourceDoc("a.py", [factories.Piece("def next_one(): pass", "next")])
    factories.index_generation(repository, [next_file], swap=False)  # generation 2, not live
    assert _kinds(examine(repair=True)) == []
    assert Chunk.objects.filter(repository=repository, generation=2).exists()


def test_a_repository_stuck_indexing_with_no_job_is_set_back(data_dir: Path) -> None:
    ready = _healthy("d/s", data_dir)
    Repository.objects.filter(pk=ready.pk).update(status=RepositoryStatus.INDEXING)
    never = Repository.objects.create(
        url="https://example.org/d/n.git", name="d/n", status=RepositoryStatus.INDEXING
    )
    assert sorted(_kinds(examine())) == ["stuck_status", "stuck_status"]
    examine(repair=True)
    assert Repository.objects.get(pk=ready.pk).status == RepositoryStatus.READY
    never.refresh_from_db()
    assert never.status == RepositoryStatus.FAILED and "re-index" in never.error


def test_a_job_whose_task_nobody_holds_is_resumed(data_dir: Path) -> None:
    repository = _healthy("d/j", data_dir)
    long_ago = timezone.now() - timedelta(minutes=5)
    lost = IndexJob.objects.create(
        repository=repository, state=JobState.EMBEDDING, heartbeat_at=long_ago
    )
    queued = IndexJob.objects.create(
        repository=repository, state=JobState.EMBEDDING, heartbeat_at=long_ago
    )
    census = TaskCensus(waiting={queued.pk})  # e.g. still in the embed queue behind others

    report = examine(repair=True, take_census=lambda: census)
    assert _kinds(report) == ["orphan_job"] and "embed_repository" in report.findings[0].action
    assert IndexJob.objects.get(pk=lost.pk).resumes == 1
    assert IndexJob.objects.get(pk=queued.pk).resumes == 0


def test_a_job_lost_too_often_is_failed(data_dir: Path) -> None:
    repository = _healthy("d/k", data_dir)
    job = IndexJob.objects.create(
        repository=repository, state=JobState.CHUNKING, resumes=3,
        heartbeat_at=timezone.now() - timedelta(minutes=5),
    )  # fmt: skip
    examine(repair=True, take_census=TaskCensus)
    job.refresh_from_db()
    assert job.state == JobState.FAILED and "lost too often" in job.error


def test_jobs_are_not_judged_when_no_worker_answers(data_dir: Path) -> None:
    repository = _healthy("d/w", data_dir)
    job = IndexJob.objects.create(
        repository=repository, state=JobState.CHUNKING,
        heartbeat_at=timezone.now() - timedelta(minutes=5),
    )  # fmt: skip
    report = examine(repair=True, take_census=lambda: None)
    assert _kinds(report) == [] and "no worker answered" in report.notes[0]
    assert IndexJob.objects.get(pk=job.pk).state == JobState.CHUNKING


def test_the_command_reports_findings_and_repairs_only_when_asked(data_dir: Path) -> None:
    (data_dir / "repos" / str(uuid.uuid4())).mkdir()
    out = io.StringIO()
    call_command("doctor", stdout=out)
    text = out.getvalue()
    assert "orphan_clone" in text and "1 found, 0 repaired" in text and "--repair" in text

    out = io.StringIO()
    call_command("doctor", "--repair", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert [f["kind"] for f in report["findings"]] == ["orphan_clone"]
    assert report["findings"][0]["repaired"] is True


def test_live_workers_are_asked_which_tasks_they_hold(
    data_dir: Path, celery_worker_process
) -> None:
    repository = _healthy("d/live", data_dir)
    job = IndexJob.objects.create(
        repository=repository, state=JobState.STORING,
        heartbeat_at=timezone.now() - timedelta(minutes=5),
    )  # fmt: skip
    report = examine()  # the real worker answers the census: it holds no such task
    assert _kinds(report) == ["orphan_job"]
    assert not any("no worker answered" in note for note in report.notes)
    assert IndexJob.objects.get(pk=job.pk).resumes == 0  # found, not repaired


def test_vectors_of_a_deleted_repositorys_chunks_are_found_and_deleted(data_dir: Path) -> None:
    kept = _healthy("d/v", data_dir, embed=True)
    gone = _healthy("d/x", data_dir, ["def only_in_the_deleted_one():\n    return 2"], embed=True)
    delete_repository(gone)  # its chunks' vectors stay in the vector index until pruned
    assert EmbeddingVector.objects.count() == 2

    (finding,) = examine().findings
    assert finding.kind == "orphan_vectors" and finding.detail.startswith("1 vectors of ")
    report = examine(repair=True)
    assert report.findings[0].action == "deleted 1 vectors"
    assert EmbeddingVector.objects.count() == ChunkEmbedding.objects.count() == 1
    hits = SearchExecutor().run(SearchRequest(query="split a header line", use_bm25=False)).hits
    assert [hit.repo_name for hit in hits] == [kept.name]
    assert _kinds(examine()) == []


def test_vectors_are_not_judged_while_a_job_is_in_flight(data_dir: Path) -> None:
    _healthy("d/y", data_dir, embed=True)
    gone = _healthy("d/z", data_dir, ["def freed_by_a_swap():\n    return 3"], embed=True)
    ChunkEmbedding.objects.filter(repository=gone).delete()  # as a swap leaves them to its embed
    IndexJob.objects.create(repository=gone, state=JobState.EMBEDDING, heartbeat_at=timezone.now())
    report = examine(repair=True)
    assert _kinds(report) == [] and "job in flight" in report.notes[-1]
    assert EmbeddingVector.objects.count() == 2  # the embed stage prunes them when it ends


# --- what fetches leave beside the clones -------------------------------------------------------

HOLD_STAGING = """
import sys
from pathlib import Path
from indexing.services.stages.clone_swap import staging_area
with staging_area(Path(sys.argv[1])) as staging:
    (staging / "objects" / "pack").mkdir(parents=True)
    (staging / "objects" / "pack" / "tmp_pack_1").write_bytes(b"PACK" * 1024)
    print(staging, flush=True)
    sys.stdin.read()  # a fetch at work until the test lets go (or kills it)
"""


def _fetching(target: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process fetching into a staging directory beside ``target`` (the real ``flock``)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD_STAGING, str(target)], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    staging = Path(process.stdout.readline().strip())
    assert staging.is_dir(), process.communicate(timeout=10)
    return process, staging


def _killed_mid_fetch(target: Path) -> Path:
    process, staging = _fetching(target)
    process.kill()  # SIGKILL: nothing cleans up, its flock is released
    process.wait(10)
    return staging


def _age(*paths: Path) -> None:
    """Make leftovers look as old as real ones (older than the doctor's grace)."""
    then = time.time() - 3600
    for path in paths:
        os.utime(path, (then, then))


def test_what_killed_fetches_left_is_found_and_removed_but_not_a_live_fetchs(
    data_dir: Path,
) -> None:
    kept = _healthy("d/f", data_dir)
    clone = data_dir / "repos" / str(kept.pk)
    live, working = _fetching(clone)  # (first: a fetch starting removes what dead ones left)
    try:
        dead = _killed_mid_fetch(clone)  # the repository is still there, its fetch died
        deleted = data_dir / "repos" / str(uuid.uuid4())  # deleted while its fetch was killed
        gone = _killed_mid_fetch(deleted)
        lonely_lock = data_dir / "repos" / f"{deleted.name}.fetch-0123456789ab.lock"
        lonely_lock.write_text("")  # killed between taking its lock and making its directory
        assert _kinds(examine()) == []  # just made: a fetch might be taking its lock right now
        _age(dead, lock_of(dead), gone, lock_of(gone), lonely_lock, working, lock_of(working))

        report = examine()
        found = {Path(f.detail.split(" is the ")[0]): f for f in report.findings}
        assert set(found) == {dead, gone, lonely_lock}, report.findings  # not the live one
        assert {f.kind for f in report.findings} == {"fetch_leftover"}
        assert (found[dead].repository, found[gone].repository) == ("d/f", "")
        assert "its repository is gone" in found[gone].detail
        assert dead.exists() and gone.exists()  # finding is not repairing

        report = examine(repair=True)
        assert all(f.repaired for f in report.findings) and len(report.findings) == 3
        left = sorted(p.name for p in (data_dir / "repos").iterdir())
        assert left == sorted([clone.name, working.name, lock_of(working).name])
        assert (working / "objects" / "pack" / "tmp_pack_1").exists()  # the live fetch's data
        assert _kinds(examine(repair=True)) == []
    finally:
        live.communicate("", timeout=10)  # the fetch ends and removes its own
    assert sorted(p.name for p in (data_dir / "repos").iterdir()) == [clone.name]


def test_deleting_a_repository_removes_its_dead_fetchs_leftovers_but_not_a_live_ones(
    data_dir: Path,
) -> None:
    repository = _healthy("d/g", data_dir)
    clone = data_dir / "repos" / str(repository.pk)
    live, working = _fetching(clone)  # (first: a fetch starting removes what dead ones left)
    try:
        dead = _killed_mid_fetch(clone)
        delete_repository(repository)
        left = sorted(p.name for p in (data_dir / "repos").iterdir())
        assert left == sorted([working.name, lock_of(working).name])  # only the live fetch's
        assert not dead.exists() and not lock_of(dead).exists()
    finally:
        live.communicate("", timeout=10)
    assert list((data_dir / "repos").iterdir()) == []
    assert _kinds(examine()) == []


def test_the_periodic_check_removes_a_dead_fetchs_leftovers(data_dir: Path, settings) -> None:
    settings.REPO_SEARCH_DOCTOR_REPAIR = True
    leftover = _killed_mid_fetch(data_dir / "repos" / str(uuid.uuid4()))
    _age(leftover, lock_of(leftover))

    findings = repair_drift()
    assert [(f["kind"], f["repaired"]) for f in findings] == [("fetch_leftover", True)]
    assert list((data_dir / "repos").iterdir()) == []


def test_the_command_reports_a_fetch_leftover(data_dir: Path) -> None:
    leftover = _killed_mid_fetch(data_dir / "repos" / str(uuid.uuid4()))
    _age(leftover, lock_of(leftover))
    out = io.StringIO()
    call_command("doctor", stdout=out)
    assert "fetch_leftover" in out.getvalue() and "1 found, 0 repaired" in out.getvalue()
    call_command("doctor", "--repair", stdout=io.StringIO())
    assert not leftover.exists() and not lock_of(leftover).exists()
