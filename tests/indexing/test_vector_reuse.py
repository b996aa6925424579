"""A text embedded once is never embedded again in the same space, whichever repository or
branch it turns up in: real index runs (fetch, index, embed with the built-in model) of local
git repositories, counting the vectors the space holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexing.models import ChunkEmbedding, EmbeddingVector, IndexedBranch, IndexJob
from indexing.services.branches import set_branches
from tests.indexing.git_server import commit_files, init_bare_repo
from tests.indexing.real_run import index, run_job

pytestmark = pytest.mark.django_db

MAIN = {
    f"pkg/module_{n:02}.py": f"def function_{n}(value):\n    return value * {n}\n"
    for n in range(12)
}
RELEASE = {
    **MAIN,
    "pkg/module_00.py": "def function_0(value):\n    return value - 1  # release fix\n",
    "pkg/hotfix.py": "def hotfix_only_on_release():\n    return 'patched'\n",
}


def _vectors() -> int:
    return EmbeddingVector.objects.count()


def test_branches_and_forks_embed_only_text_never_embedded(tmp_path: Path) -> None:
    upstream = init_bare_repo(str(tmp_path / "upstream.git"))
    first = commit_files(upstream, MAIN, message="main")
    commit_files(upstream, RELEASE, branch="release/1.0", message="release", parent=first)

    repository = index(tmp_path / "upstream.git", "acme/upstream")
    assert _vectors() == len(MAIN)

    # A branch: only its two new texts (module_00's fix, the hotfix) are embedded.
    set_branches(repository, ["release/*"])
    branch = IndexedBranch.objects.get(repository=repository)
    job = run_job(repository.jobs.filter(branch=branch).get())
    assert job.state == "done", (job.state, job.error, job.failures)
    assert _vectors() == len(MAIN) + 2
    assert ChunkEmbedding.objects.filter(repository=repository).count() == len(MAIN) + 2

    # A fork whose default branch is the release: every text has a vector already, from the
    # other repository's default branch and from its release branch.
    fork = init_bare_repo(str(tmp_path / "fork.git"))
    commit_files(fork, RELEASE, message="fork of the release")
    forked = index(tmp_path / "fork.git", "someone/fork")
    fork_job = IndexJob.objects.filter(repository=forked).get()
    assert _vectors() == len(MAIN) + 2
    assert fork_job.chunks_reused == len(RELEASE) == fork_job.chunks_embedded
    assert ChunkEmbedding.objects.filter(repository=forked).count() == len(RELEASE)
