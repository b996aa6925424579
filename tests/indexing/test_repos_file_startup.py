"""``make up`` with ``REPO_SEARCH_REPOS_FILE``: the file's repositories exist once the server
says it is ready, they get indexed, and an edit to the file is applied by beat with nobody asking.

The whole stack runs (``python -m reposearch.embedded_stack up`` in a temporary data directory,
its own PostgreSQL, Redis, worker with beat and web server), read from outside through the API
with the first administrator's token.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.indexing.git_server import commit_files, init_bare_repo
from tests.make_up_stack import Stack, make_up, user_environment

pytestmark = pytest.mark.e2e


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for name in ("alpha", "beta"):
        repo = init_bare_repo(str(tmp_path / f"{name}.git"))
        commit_files(repo, {f"src/{name}.py": f"def {name}_entry_point():\n    return 1\n"})
        repo.close()
        paths[name] = str(tmp_path / f"{name}.git")
    return paths


@pytest.fixture
def started(tmp_path: Path, sources: dict[str, str]) -> Iterator[tuple[Stack, Path]]:
    env = user_environment()
    repos_file = tmp_path / "repos.yaml"
    repos_file.write_text(f"repositories:\n  - url: {sources['alpha']}\n    name: alpha\n")
    env.update(
        REPO_SEARCH_REPOS_FILE=str(repos_file),
        REPO_SEARCH_REPOS_FILE_CHECK_SECS="1",
        REPO_SEARCH_ALLOW_LOCAL_PATHS="1",
    )
    with make_up(tmp_path, env) as stack:
        yield stack, repos_file


def test_make_up_applies_the_repository_file_and_beat_applies_its_edits(
    started: tuple[Stack, Path], sources: dict[str, str]
) -> None:
    stack, repos_file = started
    listed = stack.api("GET", "/api/repos")
    assert [(r["name"], r["managed_by_file"]) for r in listed] == [("alpha", True)]
    stack.wait_for(
        lambda: stack.api("GET", "/api/repos")[0]["status"] == "ready", "alpha being indexed", 240
    )

    repos_file.write_text(
        f"prune: true\nrepositories:\n  - url: {sources['beta']}\n    name: beta\n"
    )
    stack.wait_for(
        lambda: [r["name"] for r in stack.api("GET", "/api/repos")] == ["beta"],
        "the edited file being applied (alpha pruned, beta added)",
        120,
    )
    audit = stack.api("GET", "/api/audit?action=repos_file.*")
    actions = [row["action"] for row in audit["results"]]
    assert sorted(actions) == ["repos_file.add", "repos_file.add", "repos_file.remove"]
