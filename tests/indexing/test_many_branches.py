"""Many branches of one repository: a second branch stores only the files it changed (the
rest are the default branch's rows, referenced), deleting a branch never deletes a row another
branch uses, and re-indexing the default branch hands the rows only a branch still uses over
to that branch. Real runs of the pipeline's stages on a local git repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.test import override_settings
from dulwich.repo import Repo

from indexing.exceptions import InvalidRepositoryInput
from indexing.models import Chunk, ChunkEmbedding, IndexedBranch, Repository, SharedFile, SourceFile
from indexing.services.branch_generations import generation_counts
from indexing.services.branches import (
    branches_matching,
    clean_branch_specs,
    delete_branch,
    queue_next_branch,
    reindex_branch,
    set_branches,
)
from indexing.services.doctor import examine
from tests.indexing.git_server import commit_files, init_bare_repo
from tests.indexing.real_run import index, reindex, run_job

MAIN = {
    f"pkg/module_{n:02}.py": f"def function_{n}(value):\n    return value * {n}\n"
    for n in range(20)
}
RELEASE = {
    **{path: text for path, text in MAIN.items() if path != "pkg/module_03.py"},
    "pkg/module_00.py": "def function_0(value):\n    return value - 1  # release fix\n",
    "pkg/hotfix.py": "def hotfix_only_on_release():\n    return 'patched'\n",
}


def _mirror(tmp_path: Path) -> tuple[Path, Repo]:
    path = tmp_path / "demo.git"
    repo = init_bare_repo(str(path))
    first = commit_files(repo, MAIN, message="main")
    commit_files(repo, RELEASE, branch="release/1.0", message="release", parent=first)
    commit_files(repo, MAIN, branch="feature/x", message="feature", parent=first)
    return path, repo


def shown(repository_id: object, generation: int) -> dict[str, str]:
    """path -> content of every chunk a generation shows (owned and shared rows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.path, string_agg(c.content, '' ORDER BY c.index) FROM indexing_chunk c"
            " WHERE c.repository_id = %s AND (c.generation = %s OR c.file_id IN"
            " (SELECT file_id FROM indexing_sharedfile WHERE generation = %s))"
            " GROUP BY c.path",
            [repository_id, generation, generation],
        )
        return {path: text.strip() for path, text in cursor.fetchall()}


def texts(files: dict[str, str]) -> dict[str, str]:
    return {path: text.strip() for path, text in files.items()}


def _index_release(repository: Repository) -> IndexedBranch:
    left_out = set_branches(repository, ["release/*"])
    assert left_out == []
    branch = IndexedBranch.objects.get(repository=repository)
    assert branch.name == "release/1.0" and branch.pending is False
    job = repository.jobs.filter(branch=branch).get()
    job = run_job(job)
    assert job.state == "done", (job.state, job.error, job.failures)
    branch.refresh_from_db()
    return branch


@pytest.mark.django_db
def test_second_branch_stores_only_its_changed_files(tmp_path: Path) -> None:
    path, _ = _mirror(tmp_path)
    repository = index(path)
    files_before = SourceFile.objects.filter(repository=repository).count()
    chunks_before = Chunk.objects.filter(repository=repository).count()
    assert files_before == len(MAIN)

    branch = _index_release(repository)

    # Two changed files were stored (module_00's fix, the hotfix); the 18 others are shared.
    assert SourceFile.objects.filter(repository=repository).count() == files_before + 2
    assert Chunk.objects.filter(repository=repository).count() == chunks_before + 2
    assert SharedFile.objects.filter(generation=branch.generation).count() == 18
    assert (branch.file_count, branch.shared_file_count) == (20, 18)
    assert branch.last_indexed_commit and branch.last_indexed_at
    release = shown(repository.pk, branch.generation)
    assert release == texts(RELEASE)
    assert shown(repository.pk, repository.active_generation) == texts(MAIN)
    # Every chunk the branch shows has a vector (the shared ones had theirs already).
    assert ChunkEmbedding.objects.filter(chunk__repository=repository).count() == chunks_before + 2


@pytest.mark.django_db
def test_deleting_a_branch_keeps_what_the_default_branch_uses(tmp_path: Path) -> None:
    path, _ = _mirror(tmp_path)
    repository = index(path)
    default_ids = set(SourceFile.objects.filter(repository=repository).values_list("id", flat=True))
    branch = _index_release(repository)

    delete_branch(branch)

    repository.refresh_from_db()
    assert not IndexedBranch.objects.filter(repository=repository).exists()
    assert set(SourceFile.objects.filter(repository=repository).values_list("id", flat=True)) == (
        default_ids
    )
    assert not SharedFile.objects.filter(repository=repository).exists()
    assert shown(repository.pk, repository.active_generation) == texts(MAIN)
    assert not Chunk.objects.filter(repository=repository, path="pkg/hotfix.py").exists()


@pytest.mark.django_db
def test_reindexing_the_default_branch_leaves_the_branch_its_rows(tmp_path: Path) -> None:
    path, repo = _mirror(tmp_path)
    repository = index(path)
    branch = _index_release(repository)
    # main moves on: module_05 changes and module_07 is deleted; the branch still has both.
    moved = {p: t for p, t in MAIN.items() if p != "pkg/module_07.py"}
    moved["pkg/module_05.py"] = "def function_5(value):\n    return value * 500\n"
    commit_files(repo, moved, message="main moves", parent=repo.refs[b"refs/heads/main"])

    repository = reindex(repository)

    assert shown(repository.pk, repository.active_generation) == texts(moved)
    branch.refresh_from_db()
    assert shown(repository.pk, branch.generation) == texts(RELEASE)
    assert generation_counts(repository.pk, branch.generation)["files"] == 20
    # The old module_05 and module_07 are the branch's own rows now, stored once.
    for gone_from_main in ("pkg/module_05.py", "pkg/module_07.py"):
        rows = SourceFile.objects.filter(repository=repository, path=gone_from_main)
        owners = {row.generation for row in rows if row.blob_sha}
        assert branch.generation in owners
    assert SourceFile.objects.filter(repository=repository).count() == len(MAIN) + 2 + 1
    # The doctor sees no stale generation: every row belongs to a live one.
    report = examine(repair=True, take_census=lambda: None)
    assert not [f for f in report.findings if f.kind == "stale_generation"]
    assert shown(repository.pk, branch.generation) == texts(RELEASE)

    # And deleting the branch now drops exactly the rows only it used.
    delete_branch(branch)
    assert SourceFile.objects.filter(repository=repository).count() == len(moved)
    assert shown(repository.pk, repository.active_generation) == texts(moved)


@pytest.mark.django_db
def test_branch_reindex_while_a_job_runs_waits_for_it(tmp_path: Path) -> None:
    path, _repo = _mirror(tmp_path)
    repository = index(path)
    branch = _index_release(repository)
    job, created = reindex_branch(repository, branch)
    assert created and job is not None and job.branch_id == branch.pk
    # The default branch asked for meanwhile: pending, then queued when the branch's job ends.
    other = set_branches(repository, ["release/*", "feature/x"])
    assert other == []
    assert IndexedBranch.objects.get(name="feature/x").pending
    finished = run_job(job)
    assert finished.state == "done"
    queued = repository.jobs.filter(branch__name="feature/x").get()
    assert queued.state == "queued"
    feature = run_job(queued)
    assert feature.state == "done"
    feature_branch = IndexedBranch.objects.get(name="feature/x")
    # feature/x is main's tree exactly: every file is shared, none stored again.
    assert (feature_branch.file_count, feature_branch.shared_file_count) == (20, 20)
    assert queue_next_branch(repository.pk) is None


def test_branch_specs_are_checked_and_capped() -> None:
    assert clean_branch_specs(["refs/heads/dev", "release/*", "dev"]) == ["dev", "release/*"]
    for bad in (["bad name"], ["a..b"], "main", [3], ["[x]"]):
        with pytest.raises(InvalidRepositoryInput) as refused:
            clean_branch_specs(bad)
        assert refused.value.code == "invalid_branches"
    remote = ["main", "release/1.0", "release/2.0", "release/3.0", "dev"]
    with override_settings(REPO_SEARCH_MAX_BRANCHES=3):
        kept, left_out = branches_matching(["dev", "release/*"], remote, "main")
        assert (kept, left_out) == (["dev", "release/1.0"], ["release/2.0", "release/3.0"])
        with pytest.raises(InvalidRepositoryInput) as refused:
            clean_branch_specs(["a", "b", "c"])
        assert "REPO_SEARCH_MAX_BRANCHES=3" in refused.value.message


@pytest.mark.django_db
def test_deleting_the_repository_removes_every_branch(tmp_path: Path) -> None:
    from indexing.services.repositories import delete_repository

    path, _ = _mirror(tmp_path)
    repository = index(path)
    _index_release(repository)

    delete_repository(repository)

    assert not Repository.objects.exists()
    for model in (SourceFile, Chunk, SharedFile, IndexedBranch):
        assert not model.objects.exists(), model
