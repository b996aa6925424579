"""Where a repository's bare clone lives: ``<REPO_SEARCH_DATA_DIR>/repos/<repository id>``;
and the names of what a fetch keeps beside it while it runs.

A fetch writes into a staging directory ``<id>.fetch-<random>`` beside the clone and holds an
``flock`` on ``<id>.fetch-<random>.lock`` while its run lives (``clone_swap.staging_area``).
A run that dies leaves both behind, its lock no longer held: the next fetch of the repository
removes them (``remove_stale_staging``; so does deleting the repository), and
``manage.py doctor`` finds those no fetch will come back for.
"""

from __future__ import annotations

import fcntl
import shutil
import uuid
from pathlib import Path

from django.conf import settings

STAGING_MARK = ".fetch-"
LOCK_SUFFIX = ".lock"


def repository_dir(repository_id: object) -> Path:
    """The directory of the repository's clone (it may not exist yet, or any more)."""
    return Path(settings.REPO_SEARCH_DATA_DIR) / "repos" / str(repository_id)


def staging_dir(target: Path) -> Path:
    """A fresh directory name beside ``target`` for one fetch (not created)."""
    return target.with_name(f"{target.name}{STAGING_MARK}{uuid.uuid4().hex[:12]}")


def lock_of(staging: Path) -> Path:
    """The lock file a fetch holds while it writes ``staging``."""
    return staging.with_name(staging.name + LOCK_SUFFIX)


def staged_for(name: str) -> str | None:
    """The repository id a staging directory's (or its lock's) name belongs to; None for a
    name that is no fetch's."""
    repository_id, mark, rest = name.partition(STAGING_MARK)
    if not mark or not rest:
        return None
    try:
        uuid.UUID(repository_id)
    except ValueError:
        return None
    return repository_id


def lock_held(lock: Path) -> bool:
    """Whether a live process holds ``lock`` (``flock``; a dead process's lock is released).
    A lock file that is not there is held by nobody (and is not created by asking)."""
    try:
        with open(lock, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError:
        return False
    return False


def remove_stale_staging(target: Path) -> list[Path]:
    """Remove what runs that died mid-fetch left beside ``target`` (staging directories and
    their locks). A staging directory whose lock a live process holds is left alone, even when
    that run lost its claim: it removes its own when it stops, and can never move it in."""
    removed: list[Path] = []
    if not target.parent.is_dir():
        return removed
    prefix = target.name + STAGING_MARK
    for entry in sorted(target.parent.iterdir()):
        if not entry.name.startswith(prefix) or entry.name.endswith(LOCK_SUFFIX):
            continue
        lock = lock_of(entry)
        if lock.exists() and lock_held(lock):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        lock.unlink(missing_ok=True)
        removed.append(entry)
    for lock in target.parent.glob(f"{prefix}*{LOCK_SUFFIX}"):  # a run that died before mkdir
        if not lock.with_name(lock.name[: -len(LOCK_SUFFIX)]).exists() and not lock_held(lock):
            lock.unlink(missing_ok=True)
    return removed
