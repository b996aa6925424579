"""``make up`` with ``REPO_SEARCH_REPOS_FILE``: the file's repositories exist once the server
says it is ready, they get indexed, and an edit to the file is applied by beat with nobody asking.

The whole stack runs (``python -m reposearch.embedded_stack up`` in a temporary data directory,
its own PostgreSQL, Redis, worker with beat and web server), read from outside through the API
with the first administrator's token.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.indexing.git_server import commit_files, init_bare_repo
from tests.reposearch.test_make_up import READY_LINE, ROOT, user_environment

pytestmark = pytest.mark.e2e


def api_get(base: str, token: str, path: str) -> Any:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def wait_for(predicate: Any, what: str, seconds: float) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


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
def started(tmp_path: Path, sources: dict[str, str]) -> Iterator[tuple[str, str, Path]]:
    env, _ = user_environment(tmp_path)
    repos_file = tmp_path / "repos.yaml"
    repos_file.write_text(f"repositories:\n  - url: {sources['alpha']}\n    name: alpha\n")
    env.update(
        REPO_SEARCH_REPOS_FILE=str(repos_file),
        REPO_SEARCH_REPOS_FILE_CHECK_SECS="1",
        REPO_SEARCH_ALLOW_LOCAL_PATHS="1",
    )
    log = tmp_path / "make-up.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "reposearch.embedded_stack", "up"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_for(
            lambda: READY_LINE in log.read_text(errors="replace") or process.poll() is not None,
            "make up to get ready",
            240,
        )
        assert process.poll() is None, log.read_text(errors="replace")[-4000:]
        admin = (Path(env["REPO_SEARCH_DATA_DIR"]) / "initial-admin.txt").read_text()
        token = next(
            line.split(": ", 1)[1] for line in admin.splitlines() if line.startswith("token: ")
        )
        yield f"http://{env['REPO_SEARCH_BIND_ADDR']}", token, repos_file
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGINT)
            try:
                process.wait(90)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def test_make_up_applies_the_repository_file_and_beat_applies_its_edits(
    started: tuple[str, str, Path], sources: dict[str, str]
) -> None:
    base, token, repos_file = started
    listed = api_get(base, token, "/api/repos")
    assert [(r["name"], r["managed_by_file"]) for r in listed] == [("alpha", True)]
    wait_for(
        lambda: api_get(base, token, "/api/repos")[0]["status"] == "ready",
        "alpha to be indexed",
        240,
    )

    repos_file.write_text(
        f"prune: true\nrepositories:\n  - url: {sources['beta']}\n    name: beta\n"
    )
    wait_for(
        lambda: [r["name"] for r in api_get(base, token, "/api/repos")] == ["beta"],
        "the edited file to be applied (alpha pruned, beta added)",
        120,
    )
    audit = api_get(base, token, "/api/audit?action=repos_file.*")
    actions = [row["action"] for row in audit["results"]]
    assert sorted(actions) == ["repos_file.add", "repos_file.add", "repos_file.remove"]
