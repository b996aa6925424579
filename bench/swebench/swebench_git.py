"""The local repository the localisation benchmark indexes: one branch per base commit.

``local_repository`` makes a bare repository under the work directory that borrows the mirror's
objects (``objects/info/alternates``: nothing is copied) and names each base commit
``swe-<commit[:12]>``. A mirror may be a partial clone that left some large blobs out (astropy's
and sympy's snapshots lack a few data files, such as ``astropy/utils/iers/data/eopc04.1962-now``):
a commit with such files gets a branch at a stand-in commit of the same tree without them, so
that it can be fetched and indexed at all; every other commit is branched as it is.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

STAND_IN_IDENTITY = {
    "GIT_AUTHOR_NAME": "swebench",
    "GIT_AUTHOR_EMAIL": "swebench@localhost",
    "GIT_COMMITTER_NAME": "swebench",
    "GIT_COMMITTER_EMAIL": "swebench@localhost",
}


def branch_name(commit: str) -> str:
    return f"swe-{commit[:12]}"


def _git(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", *args], check=True, capture_output=True, text=True, input=stdin, env=env
    )
    return result.stdout.strip()


def missing_files(git_dir: Path, commit: str) -> list[str]:
    """The files of ``commit`` whose content the object store lacks."""
    listing = _git("-C", str(git_dir), "ls-tree", "-r", "-z", commit).split("\0")
    blobs: list[tuple[str, str]] = []
    for entry in filter(None, listing):
        meta, path = entry.split("\t", 1)
        _mode, kind, sha = meta.split()
        if kind == "blob":
            blobs.append((sha, path))
    checked = _git(
        "-C", str(git_dir), "cat-file", "--batch-check", stdin="\n".join(s for s, _ in blobs)
    ).splitlines()
    return [
        path for (_, path), line in zip(blobs, checked, strict=True) if line.endswith(" missing")
    ]


def stand_in_commit(git_dir: Path, commit: str, left_out: Sequence[str]) -> str:
    """A commit of ``commit``'s tree without ``left_out`` (no parent: one commit is indexed)."""
    env = {**os.environ, **STAND_IN_IDENTITY, "GIT_INDEX_FILE": str(git_dir / "stand-in-index")}
    repo = ("-C", str(git_dir))
    _git(*repo, "read-tree", commit, env=env)
    with tempfile.TemporaryDirectory() as empty:  # update-index wants a work tree; none is read
        paths = "\0".join(left_out)
        _git(*repo, f"--work-tree={empty}", "update-index", "--force-remove", "-z", "--stdin",
             stdin=paths, env=env)  # fmt: skip
    tree = _git(*repo, "write-tree", env=env)
    message = f"{commit} without {len(left_out)} files the mirror lacks"
    return _git(*repo, "commit-tree", tree, "-m", message, env=env)


def local_repository(mirror: Path, work_dir: Path, repo: str, commits: Sequence[str]) -> Path:
    """A bare repository with a branch per base commit (the mirror's objects borrowed), HEAD at
    the first one."""
    git_dir = work_dir / f"{repo.replace('/', '+')}.git"
    if not git_dir.exists():
        _git("init", "-q", "--bare", str(git_dir))
        objects = Path(_git("-C", str(mirror), "rev-parse", "--absolute-git-dir")) / "objects"
        (git_dir / "objects" / "info" / "alternates").write_text(f"{objects}\n", encoding="utf-8")
    present = set(_git("-C", str(git_dir), "for-each-ref", "--format=%(refname:short)").split())
    for commit in commits:
        if branch_name(commit) in present:
            continue
        left_out = missing_files(git_dir, commit)
        target = stand_in_commit(git_dir, commit, left_out) if left_out else commit
        if left_out:
            print(f"  {branch_name(commit)}: {len(left_out)} files left out: {left_out[:3]}")
        _git("-C", str(git_dir), "update-ref", f"refs/heads/{branch_name(commit)}", target)
    _git("-C", str(git_dir), "symbolic-ref", "HEAD", f"refs/heads/{branch_name(commits[0])}")
    return git_dir
