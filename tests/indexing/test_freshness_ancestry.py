"""The freshness state compares commits by ancestry (issue 29 item 3): an index newer than the
last poll is not "behind" the remote; a push noted after the fetch still is."""

from __future__ import annotations

from pathlib import Path

import pytest
from dulwich.repo import Repo

from indexing.clone_paths import repository_dir
from indexing.git.ancestry import is_ancestor
from indexing.models import Repository
from indexing.services import polling
from indexing.services.repositories import reindex_repository
from tests.indexing.git_server import commit_files
from tests.indexing.real_run import run_job
from tests.indexing.test_polling import FILES, indexed, server, source

pytestmark = pytest.mark.django_db
__all__ = ["server", "source"]  # the fixtures


def push(source: Repo, name: str) -> str:
    parent = source.refs[b"refs/heads/main"]
    return commit_files(source, FILES | {name: "x = 1\n"}, parent=parent, message=name).decode()


def test_a_manual_reindex_newer_than_the_last_poll_is_not_behind(server, source) -> None:  # type: ignore[no-untyped-def]
    repository = indexed(server.url("team/demo.git"))
    polling.poll_repository(repository)  # the poll notes the tip that was indexed
    repository.refresh_from_db()
    polled = repository.remote_tip
    assert polled == repository.last_indexed_commit and repository.behind is False

    newer = push(source, "src/second.py")
    job, created = reindex_repository(repository)  # the Re-index button, before any poll
    assert created and run_job(job).state == "done"
    repository.refresh_from_db()
    assert repository.last_indexed_commit == newer
    assert repository.behind is False, (repository.remote_tip, polled)
    assert is_ancestor(repository_dir(repository.pk), polled, newer) is True
    assert is_ancestor(repository_dir(repository.pk), newer, polled) is False

    # A push after that is noticed by the next poll: behind again, as it should be.
    latest = push(source, "src/third.py")
    polling.poll_repository(repository)
    repository = Repository.objects.get(pk=repository.pk)
    assert repository.remote_tip == latest and repository.behind is True


def test_ancestry_is_unknown_without_the_objects(tmp_path: Path) -> None:
    assert is_ancestor(tmp_path / "nothing", "a" * 40, "b" * 40) is None
