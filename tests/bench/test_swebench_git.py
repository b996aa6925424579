"""The benchmark's local repository: a branch per base commit, the mirror's objects borrowed; a
commit whose mirror lacks some blobs (a partial clone) is branched without those files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "swebench"))

from swebench_git import branch_name, local_repository


def _git(cwd: Path, *args: str) -> str:
    identity = ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True)
    return done.stdout.decode().strip()


def test_each_base_commit_is_a_branch_and_missing_blobs_are_left_out(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    _git(tree, "init", "-q")
    (tree / "code.py").write_text("def f():\n    return 1\n")
    _git(tree, "add", ".")
    _git(tree, "commit", "-q", "-m", "one")
    whole = _git(tree, "rev-parse", "HEAD")
    (tree / "data.bin").write_text("large data the partial clone left out\n")
    _git(tree, "add", ".")
    _git(tree, "commit", "-q", "-m", "two")
    partial = _git(tree, "rev-parse", "HEAD")
    blob = _git(tree, "rev-parse", "HEAD:data.bin")
    (tree / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # as a partial clone lacks it

    git_dir = local_repository(tree / ".git", tmp_path / "work", "o/r", [whole, partial])

    refs = _git(git_dir, "for-each-ref", "--format=%(refname:short) %(objectname)").splitlines()
    assert f"{branch_name(whole)} {whole}" in refs  # a complete commit is branched as it is
    assert _git(git_dir, "symbolic-ref", "HEAD") == f"refs/heads/{branch_name(whole)}"
    stand_in = branch_name(partial)
    assert _git(git_dir, "ls-tree", "-r", "--name-only", stand_in).split() == ["code.py"]
    assert _git(git_dir, "show", f"{stand_in}:code.py") == "def f():\n    return 1"
    # nothing the branches reach is missing: the indexer can fetch them
    _git(git_dir, "fsck", "--connectivity-only", "--no-dangling")
