"""Fixtures of the indexing tests: a source repository with two branches, and the end-to-end
demo repository (tests/indexing/demo_repository.py), each served over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dulwich.repo import Repo

from tests.indexing.demo_repository import FILES
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Repo]:
    repo = init_bare_repo(str(tmp_path / "source.git"))
    commit_files(repo, {"README.md": "# old\n"}, message="first")
    main = commit_files(
        repo,
        {"README.md": "# demo\n", "src/app.py": "def main():\n    return 1\n"},
        parent=repo.refs[b"refs/heads/main"],
        message="second",
    )
    commit_files(repo, {"dev.txt": "dev branch\n"}, branch="dev", parent=main)
    yield repo
    repo.close()


@pytest.fixture
def server(source: Repo) -> Iterator[GitHttpServer]:
    with GitHttpServer({"org/repo.git": source}) as running:
        yield running


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[GitHttpServer, object]]:
    repo = init_bare_repo(str(tmp_path / "demo.git"))
    commit_files(repo, FILES, message="first")
    with GitHttpServer({"team/demo.git": repo}) as server:
        yield server, repo
