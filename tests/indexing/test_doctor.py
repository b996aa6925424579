"""``manage.py doctor``: planted drift between the database and the data directory is found,
reported, and repaired only with ``--repair``."""

from __future__ import annotations

import io
import json
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from indexing.models import Chunk, IndexJob, JobKind, JobState, Repository, RepositoryStatus
from indexing.services.doctor import examine
from indexing.services.recovery import TaskCensus
from search.executor import SearchExecutor, SearchRequest
from tests import factories

pytestmark = pytest.mark.django_db
SOURCE = ["def parse_http_header(line):\n    return line.split(':', 1)"]


@pytest.fixture
def data_dir(settings, tmp_path: Path) -> Path:
    settings.REPO_SEARCH_DATA_DIR = str(tmp_path)
    (tmp_path / "repos").mkdir()
    return tmp_path


def _healthy(name: str, data_dir: Path) -> Repository:
    repository = factories.indexed_repository(name, SOURCE, url=f"https://example.org/{name}.git")
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
    assert _kinds(report) == ["orphan_job"] and not report.notes
    assert IndexJob.objects.get(pk=job.pk).resumes == 0  # found, not repaired
