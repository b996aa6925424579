"""Hostile remotes fail the job at once with a plain message: redirects to file://, ftp:// or in
a loop, and trees git would reject. And the clone deadline covers the whole job across its
retries: a server that hangs up just before each attempt's timeout cannot hold a worker longer."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexing.git.hostile import CorruptObject, RefusedRedirect
from indexing.models import IndexJob
from indexing.services.repositories import add_repository
from indexing.services.stages import fetch_and_index as pipeline
from indexing.services.stages.run_context import TransientFailure
from tests.indexing.git_fetch_support import fetch
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo
from tests.indexing.hostile_servers import DripThenHangUpServer, RedirectServer

REDIRECTS = {
    "file": ("file:///etc/passwd", "URL without a host (such as file://)"),
    "ftp": ("ftp://127.0.0.1/org/repo.git", "redirected to a ftp:// URL"),
    "loop": ("", "redirected too many times (a redirect loop)"),
}


@pytest.mark.parametrize("case", sorted(REDIRECTS))
def test_a_refused_redirect_is_a_user_error(case: str, tmp_path: Path) -> None:
    target, message = REDIRECTS[case]
    with RedirectServer(target) as server, pytest.raises(RefusedRedirect) as info:
        fetch(server.url(), tmp_path / "out")
    assert message in info.value.message
    assert not info.value.transient
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("path", ["../outside.py", ".git/hooks/post-checkout", "ok/.git/x"])
def test_a_tree_git_would_reject_is_a_user_error(path: str, tmp_path: Path) -> None:
    repo = init_bare_repo(str(tmp_path / "evil.git"))
    commit_files(repo, {"README.md": "# hi\n", path: "#!/bin/sh\necho owned\n"})
    with GitHttpServer({"org/evil.git": repo}) as server, pytest.raises(CorruptObject) as info:
        fetch(server.url("org/evil.git"), tmp_path / "out")
    assert "corrupt git object (invalid name" in info.value.message
    assert not info.value.transient
    assert not (tmp_path / "out").exists()  # nothing of it is kept for the index stage


def _attempt(job_id: int) -> bool:
    """One run of the fetch task as the worker makes it (not its last retry): True = retried."""
    try:
        pipeline.run_fetch(job_id, final_attempt=False)
    except TransientFailure:
        return True
    return False


@pytest.mark.django_db  # no commit: the task add_repository queues never reaches a worker
def test_a_job_redirected_to_file_fails_at_once_without_retries() -> None:
    with RedirectServer("file:///etc/passwd") as server:
        job = add_repository(server.url(), "", "org/redirected", False)
        assert _attempt(job.pk) is False
    job = IndexJob.objects.select_related("repository").get(pk=job.pk)
    assert job.state == "failed" and job.attempts == 1
    assert "only http and https redirects are followed" in job.error
    assert job.repository.status == "failed" and "file://" in job.repository.error


@pytest.mark.django_db  # no commit: the task add_repository queues never reaches a worker
def test_the_clone_deadline_covers_every_attempt_of_a_job(settings) -> None:  # type: ignore[no-untyped-def]
    settings.REPO_SEARCH_CLONE_TIMEOUT_SECS = 5
    with DripThenHangUpServer(hang_up_s=2.0) as server:
        job = add_repository(server.url(), "", "org/drip", False)
        retries = 0
        while _attempt(job.pk):  # the task's retries, without the waits between them
            retries += 1
            assert retries < 10, "the job kept being retried"
    job = IndexJob.objects.get(pk=job.pk)
    assert job.state == "failed", (job.state, job.error)
    assert "clone timed out" in job.error and "REPO_SEARCH_CLONE_TIMEOUT_SECS" in job.error
    assert f"over {job.attempts} attempts" in job.error and job.attempts >= 2
    # Every attempt together fetched no longer than the deadline (plus the last one's unwinding).
    assert job.stage_timings["cloning"] <= 5 + 1.5
    assert server.connections == job.attempts
