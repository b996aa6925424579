"""A repository built with real ``git`` (several commits touching one file, a merge), and what
``git log`` and ``git blame`` say about a clone of it: the reference answers for history and
blame (``indexing.git.history``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from indexing.git.fetch import fetch_branch

PATH = "src/app/core.py"


def git(repo: Path, *args: str, when: int = 1_700_000_000) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Ada Lovelace",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada Lovelace",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        "GIT_AUTHOR_DATE": f"@{when} +0000",
        "GIT_COMMITTER_DATE": f"@{when} +0000",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def build_source(directory: Path, commits: int = 6) -> Path:
    """A working repository on ``main``: ``PATH`` created, edited at the top, middle and end,
    lines removed, another file changed between, and a merged branch that edited it too."""
    source = directory / "source"
    source.mkdir()
    git(source, "init", "-q", "-b", "main")
    target = source / PATH
    target.parent.mkdir(parents=True)
    lines = [f"line {n}\n" for n in range(1, 21)]
    when = 1_700_000_000

    def commit(message: str) -> None:
        nonlocal when
        when += 3600
        git(source, "add", "-A", when=when)
        git(source, "commit", "-q", "-m", message, when=when)

    target.write_text("".join(lines))
    (source / "README.md").write_text("# Demo\n")
    commit("Add core")
    for step in range(commits - 3):
        lines[(step * 7) % len(lines)] = f"changed in step {step}\n"
        lines.append(f"appended in step {step}\n")
        target.write_text("".join(lines))
        commit(f"Edit core, step {step}\n\nA longer body.")
        (source / "README.md").write_text(f"# Demo {step}\n")
        commit(f"Docs only, step {step}")
    git(source, "checkout", "-q", "-b", "side")
    before = lines[2]
    lines[2] = "changed on a branch\n"
    target.write_text("".join(lines))
    commit("Edit core on a branch")
    git(source, "checkout", "-q", "main")
    lines[2] = before  # main goes on without the branch's change: the merge brings it
    del lines[10:12]
    target.write_text("".join(lines))
    commit("Remove two lines")
    when += 3600
    git(source, "merge", "-q", "--no-edit", "side", when=when)
    return source


def clone(source: Path, target: Path, depth: int | None) -> str:
    """Fetch ``source``'s main branch into ``target`` as indexing does; the commit."""
    fetched = fetch_branch(
        str(source),
        target,
        branch="main",
        max_bytes=50_000_000,
        timeout_s=60,
        allow_private_hosts=True,
        allow_local_paths=True,
        depth=depth,
    )
    return fetched.commit_sha


def git_log(clone_dir: Path, commit: str, path: str = PATH) -> list[str]:
    out = git(clone_dir, "--git-dir", str(clone_dir), "log", "--format=%H", commit, "--", path)
    return out.split()


def git_blame(clone_dir: Path, commit: str, path: str = PATH) -> list[str]:
    """The commit of each line, from ``git blame --porcelain``."""
    out = git(clone_dir, "--git-dir", str(clone_dir), "blame", "--porcelain", commit, "--", path)
    owners: list[str] = []
    for line in out.splitlines():
        head = line.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and not line.startswith("\t"):
            owners.append(head[0])
    return owners
