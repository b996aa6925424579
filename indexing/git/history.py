"""A file's history and blame at a commit, read from a clone's object store (no checkout).

Both walk commits newest first (by commit time, as git does), comparing only the path's entry
in each commit's tree with its parents' (no whole-tree diffs): history lists those that
changed it, as ``git log -- <path>`` does (a merge that kept one parent's version follows only
that parent). Renames are not followed. Both are bounded: a number of commits and a time budget, past which they stop and say why
(``stopped``). A clone is usually shallow (indexing fetches at depth 1): a commit whose
parents are not in the clone is a boundary, and ``shallow_end`` says the history ended
there rather than at the file's first commit.

Blame passes lines from a commit to its parents, newest commit first, as ``git blame`` does:
a parent holding the very same file takes them all; otherwise a line the parent's version
also has (by ``difflib``'s matching, which can pair a few repeated lines differently from
git's diff) passes to it, and a line no parent has is blamed on the
commit. Lines that reach a commit whose parents the clone lacks, or are still unplaced when a
bound stops the walk, are blamed on that commit and marked ``boundary`` (git's ``^``): they
are at least that old.
"""

from __future__ import annotations

import difflib
import heapq
import itertools
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from dulwich.errors import NotTreeError
from dulwich.object_store import tree_lookup_path
from dulwich.objects import Blob, Commit, ObjectID
from dulwich.repo import Repo

HISTORY_MAX_COMMITS = 100
HISTORY_MAX_SECONDS = 5.0
BLAME_MAX_COMMITS = 2000  # commits read, those that left the file alone included
BLAME_MAX_SECONDS = 8.0
BLAME_MAX_BYTES = 512 * 1024
BLAME_MAX_LINES = 10_000


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    author: str
    email: str
    authored: datetime  # aware, UTC
    summary: str  # the message's first line
    message: str


@dataclass
class FileHistory:
    commits: list[CommitInfo]
    stopped: str = ""  # "" (complete), "count" or "time"
    shallow_end: bool = False  # ended at a commit whose parents the clone does not hold


@dataclass(frozen=True)
class BlameLine:
    number: int
    text: str
    commit: CommitInfo
    boundary: bool  # blamed on the oldest revision read: at least that old


@dataclass
class FileBlame:
    lines: list[BlameLine] = field(default_factory=list)
    stopped: str = ""  # "", "count", "time", "size" (too large to blame) or "binary"
    shallow_end: bool = False
    revisions: int = 0  # commits read that touched the path


def commit_info(commit: Commit) -> CommitInfo:
    author = commit.author.decode("utf-8", "replace")
    name, _, email = author.partition(" <")
    message = commit.message.decode("utf-8", "replace")
    return CommitInfo(
        sha=commit.id.decode("ascii"),
        author=name.strip(),
        email=email.rstrip(">").strip(),
        authored=datetime.fromtimestamp(commit.author_time, tz=UTC),
        summary=message.strip().split("\n", 1)[0][:300],
        message=message,
    )


def _entry(repo: Repo, commit: Commit, path: bytes) -> tuple[int, bytes] | None:
    """``(mode, sha)`` at ``path`` in the commit's tree (a file or a directory); None."""
    try:
        mode, sha = tree_lookup_path(repo.object_store.__getitem__, commit.tree, path)
    except (KeyError, NotTreeError):
        return None
    return mode, sha


def file_history(
    repo_dir: str | os.PathLike[str],
    commit: str,
    path: str,
    *,
    max_commits: int = HISTORY_MAX_COMMITS,
    max_seconds: float = HISTORY_MAX_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> FileHistory:
    """The commits that touched ``path``, newest first, from ``commit`` back (``git log
    --format=%H <commit> -- <path>``), at most ``max_commits`` within ``max_seconds``.

    git's default simplification: a commit is listed when its ``path`` differs from every
    parent's; a merge whose ``path`` equals one parent's follows only that parent."""
    deadline = clock() + max_seconds
    name = path.encode("utf-8")
    history = FileHistory(commits=[])
    with Repo(os.fspath(repo_dir)) as repo:
        store = repo.object_store
        shallows = repo.get_shallow()
        start = store[ObjectID(commit.encode("ascii"))]
        if not isinstance(start, Commit):
            raise KeyError(commit)
        waiting: dict[ObjectID, Commit] = {start.id: start}
        queue: list[tuple[int, int, ObjectID]] = [(-start.commit_time, 0, start.id)]
        order = itertools.count(1)
        while queue:
            if clock() > deadline:
                history.stopped = "time"
                break
            _, _, commit_id = heapq.heappop(queue)
            current = waiting.pop(commit_id)
            parent_ids = repo.get_parents(commit_id, current)
            parents = [p for p in (store[i] for i in parent_ids if i in store)]
            mine = _entry(repo, current, name)
            if commit_id in shallows or len(parents) < len(parent_ids):
                history.shallow_end = history.shallow_end or mine is not None
            same = [p for p in parents if isinstance(p, Commit) and _entry(repo, p, name) == mine]
            follow = same[:1] or parents
            if not same and (mine is not None or parents):
                if len(history.commits) == max_commits:
                    history.stopped = "count"
                    break
                history.commits.append(commit_info(current))
            for parent in follow:
                if isinstance(parent, Commit) and parent.id not in waiting:
                    waiting[parent.id] = parent
                    heapq.heappush(queue, (-parent.commit_time, next(order), parent.id))
        if history.stopped or not history.commits:
            history.shallow_end = False
        return history


def _blob_at(repo: Repo, commit: Commit, path: bytes) -> ObjectID | None:
    """The blob at ``path`` in the commit's tree; None when there is no file there."""
    try:
        mode, sha = tree_lookup_path(repo.object_store.__getitem__, commit.tree, path)
    except (KeyError, NotTreeError):
        return None
    return sha if stat.S_ISREG(mode) or stat.S_ISLNK(mode) else None


@dataclass
class _Suspect:
    """A commit some lines may come from: ``pending`` maps a target line to its position in
    this commit's version of the file."""

    commit: Commit
    blob: ObjectID
    pending: dict[int, int]


def blame_file(
    repo_dir: str | os.PathLike[str],
    commit: str,
    path: str,
    *,
    max_commits: int = BLAME_MAX_COMMITS,
    max_seconds: float = BLAME_MAX_SECONDS,
    max_bytes: int = BLAME_MAX_BYTES,
    max_lines: int = BLAME_MAX_LINES,
    clock: Callable[[], float] = time.monotonic,
) -> FileBlame:
    """The commit that last changed each line of ``path`` at ``commit`` (``git blame``'s
    answer), reading at most ``max_commits`` commits within ``max_seconds``; a file over
    ``max_bytes`` or ``max_lines`` is not blamed (``stopped == "size"``). ``KeyError`` when
    the commit or the path is not in the clone."""
    deadline = clock() + max_seconds
    name = path.encode("utf-8")
    with Repo(os.fspath(repo_dir)) as repo:
        store = repo.object_store
        start = store[ObjectID(commit.encode("ascii"))]
        if not isinstance(start, Commit):
            raise KeyError(commit)
        sha = _blob_at(repo, start, name)
        if sha is None:
            raise KeyError(path)
        result = FileBlame()
        blob = store[sha]
        if not isinstance(blob, Blob) or blob.raw_length() > max_bytes:
            result.stopped = "size"
            return result
        if b"\x00" in blob.as_raw_string()[:8000]:
            result.stopped = "binary"
            return result
        target = blob.splitlines()
        if len(target) > max_lines:
            result.stopped = "size"
            return result
        texts: dict[ObjectID, list[bytes]] = {sha: target}

        def lines_of(blob_id: ObjectID) -> list[bytes]:
            if blob_id not in texts:
                found = store[blob_id]
                texts[blob_id] = found.splitlines() if isinstance(found, Blob) else []
            return texts[blob_id]

        owners: list[Commit | None] = [None] * len(target)
        boundary: set[int] = set()
        shallows = repo.get_shallow()
        suspects = {start.id: _Suspect(start, sha, {n: n for n in range(len(target))})}
        queue: list[tuple[int, int, ObjectID]] = [(-start.commit_time, 0, start.id)]
        order = itertools.count(1)
        while queue:
            if result.revisions == max_commits:
                result.stopped = "count"
                break
            if clock() > deadline:
                result.stopped = "time"
                break
            _, _, suspect_id = heapq.heappop(queue)
            suspect = suspects.pop(suspect_id)
            result.revisions += 1
            parents = repo.get_parents(suspect_id, suspect.commit)
            held = [store[p] for p in parents if p in store]
            at_edge = suspect_id in shallows or len(held) < len(parents)
            versions = [(p, _blob_at(repo, p, name)) for p in held if isinstance(p, Commit)]
            # A parent with the very same file takes every line (git's "TREESAME" parent).
            same = [(p, b) for p, b in versions if b == suspect.blob]
            pending = suspect.pending
            for parent, parent_blob in same[:1] or versions:
                if not pending or parent_blob is None:
                    continue
                if parent_blob == suspect.blob:
                    moved, pending = pending, {}
                else:
                    moved, pending = _split(lines_of(parent_blob), lines_of(suspect.blob), pending)
                if not moved:
                    continue
                if parent.id in suspects:
                    suspects[parent.id].pending.update(moved)
                else:
                    suspects[parent.id] = _Suspect(parent, parent_blob, moved)
                    heapq.heappush(queue, (-parent.commit_time, next(order), parent.id))
            for line in pending:
                owners[line] = suspect.commit
                if at_edge:
                    boundary.add(line)
                    result.shallow_end = True
        for left in suspects.values():  # stopped at a bound: these lines are at least this old
            for line in left.pending:
                owners[line] = left.commit
                boundary.add(line)
        if result.stopped:
            result.shallow_end = False
        infos: dict[bytes, CommitInfo] = {}
        for number, (text, owner) in enumerate(zip(target, owners, strict=True), start=1):
            assert owner is not None
            info = infos.get(owner.id) or infos.setdefault(owner.id, commit_info(owner))
            result.lines.append(
                BlameLine(
                    number=number,
                    text=text.decode("utf-8", "replace").rstrip("\r\n"),
                    commit=info,
                    boundary=number - 1 in boundary,
                )
            )
        return result


def _split(
    older: list[bytes], newer: list[bytes], pending: dict[int, int]
) -> tuple[dict[int, int], dict[int, int]]:
    """``pending`` (target line -> position in ``newer``) split into the lines ``older`` has
    too (target line -> position in ``older``) and those it lacks (unchanged)."""
    matcher = difflib.SequenceMatcher(a=older, b=newer, autojunk=False)
    kept: dict[int, int] = {}  # position in newer -> position in older
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                kept[j1 + offset] = i1 + offset
    moved = {line: kept[at] for line, at in pending.items() if at in kept}
    left = {line: at for line, at in pending.items() if at not in kept}
    return moved, left
