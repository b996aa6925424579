"""A file's history and blame at a commit, read from a clone's object store (no checkout).

Both walk the commits that touched the path, newest first, as ``git log -- <path>`` does
(merges simplified: a merge that kept one parent's version follows that parent). Both are
bounded: a number of commits and a time budget, past which they stop and say why
(``stopped``). A clone is usually shallow (indexing fetches at depth 1): a commit whose
parents are not in the clone is a boundary, and ``shallow_end`` says the history ended
there rather than at the file's first commit.

Blame passes lines from a revision to the one before it that touched the path, as ``git
blame`` does: a line present (by ``difflib``'s matching) in the older version is blamed on
it or further back; one that is not is blamed on the newer revision. Lines still unblamed
when the walk ends at a boundary or a bound are blamed on the oldest revision read, marked
``boundary`` (git's ``^``): they are at least that old.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from dulwich.object_store import tree_lookup_path
from dulwich.objects import Blob, Commit, ObjectID
from dulwich.repo import Repo
from dulwich.walk import Walker

HISTORY_MAX_COMMITS = 100
HISTORY_MAX_SECONDS = 5.0
BLAME_MAX_COMMITS = 500
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
    stopped: str = ""  # "", "count", "time" or "size" (the file is too large to blame)
    shallow_end: bool = False
    revisions: int = 0  # commits read that touched the path


class _OutOfTime(Exception):
    pass


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


class _PathWalk:
    """Commits touching ``path`` from ``commit`` back, with the clone's boundaries noted."""

    def __init__(
        self, repo: Repo, commit: str, path: str, deadline: float, clock: Callable[[], float]
    ) -> None:
        self.repo = repo
        self.boundary: set[bytes] = set()  # commits whose parents are (partly) missing
        self.deadline = deadline
        self.cut_short = False  # an object the clone does not hold ended the walk
        self._clock = clock
        self.walker = Walker(
            repo.object_store,
            [ObjectID(commit.encode("ascii"))],
            paths=[path.encode("utf-8")],
            simplify_history=True,
            get_parents=self._parents,
        )

    def _parents(self, commit: Commit) -> list[ObjectID]:
        if self._clock() > self.deadline:
            raise _OutOfTime
        parents = self.repo.get_parents(commit.id, commit)
        held = [p for p in parents if p in self.repo.object_store]
        if commit.id in self.repo.get_shallow() or len(held) < len(parents):
            self.boundary.add(commit.id)
        return held

    def __iter__(self) -> Iterator[Commit]:
        try:
            for entry in self.walker:
                yield entry.commit
        except KeyError:  # an object the clone does not hold: the history ends here
            self.cut_short = True


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
    --format=%H <commit> -- <path>``), at most ``max_commits`` within ``max_seconds``."""
    with Repo(os.fspath(repo_dir)) as repo:
        walk = _PathWalk(repo, commit, path, clock() + max_seconds, clock)
        history = FileHistory(commits=[])
        try:
            for found in walk:
                if len(history.commits) == max_commits:
                    history.stopped = "count"
                    break
                history.commits.append(commit_info(found))
        except _OutOfTime:
            history.stopped = "time"
        if not history.stopped and history.commits:
            history.shallow_end = bool(walk.boundary) or walk.cut_short
        return history


def _blob_lines(repo: Repo, commit: Commit, path: bytes) -> list[bytes] | None:
    try:
        _, sha = tree_lookup_path(repo.object_store.__getitem__, commit.tree, path)
    except KeyError:
        return None
    blob = repo.object_store[sha]
    return blob.splitlines() if isinstance(blob, Blob) else None


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
    answer), within the bounds; a file over ``max_bytes`` or ``max_lines`` is not blamed
    (``stopped == "size"``). ``KeyError`` when the commit or the path is not in the clone."""
    with Repo(os.fspath(repo_dir)) as repo:
        start = repo.object_store[ObjectID(commit.encode("ascii"))]
        if not isinstance(start, Commit):
            raise KeyError(commit)
        _, sha = tree_lookup_path(repo.object_store.__getitem__, start.tree, path.encode())
        blob = repo.object_store[sha]
        if not isinstance(blob, Blob):
            raise KeyError(path)
        result = FileBlame()
        if blob.raw_length() > max_bytes:
            result.stopped = "size"
            return result
        target = blob.splitlines()
        if len(target) > max_lines:
            result.stopped = "size"
            return result
        owners: list[Commit | None] = [None] * len(target)
        # position in the newer revision -> the target line it is, for lines not yet blamed
        pending = {index: index for index in range(len(target))}
        newer: tuple[Commit, list[bytes]] | None = None
        walk = _PathWalk(repo, commit, path, clock() + max_seconds, clock)
        try:
            for older in walk:
                if result.revisions == max_commits:
                    result.stopped = "count"
                    break
                result.revisions += 1
                lines = _blob_lines(repo, older, path.encode())
                if newer is None:  # the first commit back that touched the path
                    newer = (older, lines or [])
                    continue
                pending = _pass_back(newer, lines or [], pending, owners)
                newer = (older, lines or [])
                if not pending:
                    break
                if clock() > walk.deadline:
                    raise _OutOfTime
        except _OutOfTime:
            result.stopped = "time"
        infos: dict[bytes, CommitInfo] = {}
        if newer is not None:
            oldest = newer[0]
            for index in pending.values():
                owners[index] = oldest
            at_boundary = oldest.id in walk.boundary or walk.cut_short
            ended_early = bool(result.stopped) or at_boundary
            result.shallow_end = not result.stopped and at_boundary and bool(pending)
        else:  # no commit read at all (out of time at once)
            oldest, ended_early = start, True
            owners = [start] * len(target)
        for number, (text, owner) in enumerate(zip(target, owners, strict=True), start=1):
            assert owner is not None
            info = infos.get(owner.id) or infos.setdefault(owner.id, commit_info(owner))
            result.lines.append(
                BlameLine(
                    number=number,
                    text=text.decode("utf-8", "replace").rstrip("\r\n"),
                    commit=info,
                    boundary=ended_early and owner.id == oldest.id and bool(pending),
                )
            )
        return result


def _pass_back(
    newer: tuple[Commit, list[bytes]],
    older_lines: list[bytes],
    pending: dict[int, int],
    owners: list[Commit | None],
) -> dict[int, int]:
    """Blame the newer revision for its pending lines the older one lacks; the target
    lines still pending, as positions in the older revision."""
    commit, newer_lines = newer
    still: dict[int, int] = {}  # position in older -> target line
    matcher = difflib.SequenceMatcher(a=older_lines, b=newer_lines, autojunk=False)
    kept: dict[int, int] = {}  # position in newer -> position in older
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                kept[j1 + offset] = i1 + offset
    for position, target_line in pending.items():
        if position in kept:
            still[kept[position]] = target_line
        else:
            owners[target_line] = commit
    return still
