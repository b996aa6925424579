"""The clone directory's disk full (a 1 MB tmpfs mounted as REPO_SEARCH_DATA_DIR/repos): the
fetch fails at once with a plain "no space left" message, on its own and as a job on a real
worker (tests/fault_stack.py), and leaves no directory behind."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexing.git.disk_space import NoSpaceLeft
from tests.fault_stack import fault_stack
from tests.indexing.git_fetch_support import fetch
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """``<tmp>/data/repos`` on a 1 MB tmpfs; the test skips where mounting is not permitted."""
    repos = tmp_path / "data" / "repos"
    repos.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(repos)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs: {mounted.stderr.strip()}")
    try:
        yield repos
    finally:
        subprocess.run(["umount", "-l", str(repos)], check=False)


@pytest.fixture
def big(tmp_path: Path) -> Iterator[GitHttpServer]:
    repo = init_bare_repo(str(tmp_path / "big.git"))
    commit_files(repo, {"data/blob.bin": os.urandom(3 * 1024 * 1024), "app.py": "x = 1\n"})
    with GitHttpServer({"team/big.git": repo}) as server:
        yield server


def test_a_full_disk_fails_the_fetch_plainly_and_leaves_nothing(
    small_disk: Path, big: GitHttpServer
) -> None:
    with pytest.raises(NoSpaceLeft, match="no space left on the device") as info:
        fetch(big.url("team/big.git"), small_disk / "1")
    assert not info.value.transient
    assert os.listdir(small_disk) == []


@pytest.mark.e2e
def test_a_job_on_a_full_disk_fails_at_once_on_a_real_worker(
    small_disk: Path, big: GitHttpServer, tmp_path: Path
) -> None:
    with fault_stack(tmp_path / "stack", data_dir=small_disk.parent) as stack:
        job = stack.wait_until_finished(stack.add_repository(big.url("team/big.git")), 180)
    assert job["state"] == "failed", (job["state"], job["error"])
    assert "no space left on the device" in job["error"] and job["attempts"] == 1
    assert os.listdir(small_disk) == []  # no half-written clone
