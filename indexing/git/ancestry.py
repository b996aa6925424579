"""Whether one commit is an ancestor of another, from a clone's object store (dulwich).

Clones are shallow, so the answer may be unknown: ``None`` when the walk reaches a commit the
store does not hold (or ``max_commits``) before it could decide.
"""

from __future__ import annotations

from pathlib import Path

from dulwich.objects import Commit, ObjectID
from dulwich.repo import Repo

MAX_COMMITS = 5000


def is_ancestor(
    repo_path: Path, ancestor: str, descendant: str, max_commits: int = MAX_COMMITS
) -> bool | None:
    """True when ``ancestor`` is ``descendant`` or one of its ancestors; False when the whole
    history of ``descendant`` was walked without meeting it; None when that cannot be told."""
    if not ancestor or not descendant:
        return None
    if ancestor == descendant:
        return True
    try:
        repo = Repo(str(repo_path))
    except Exception:
        return None
    try:
        target = ancestor.encode()
        seen: set[bytes] = set()
        stack = [descendant.encode()]
        complete = True
        while stack:
            sha = stack.pop()
            if sha in seen:
                continue
            if len(seen) >= max_commits:
                return None
            seen.add(sha)
            try:
                commit = repo.object_store[ObjectID(sha)]
            except KeyError:
                complete = False  # past the shallow boundary
                continue
            if not isinstance(commit, Commit):
                return None
            for parent in commit.parents:
                if parent == target:
                    return True
                stack.append(parent)
        return False if complete else None
    finally:
        repo.close()
