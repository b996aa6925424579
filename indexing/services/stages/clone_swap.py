"""A fetch writes into a staging directory of its own; only the run that still holds its claim
moves it into place.

The clone directory (``<data>/repos/<repository id>``) is shared by every worker host. A fetch
never writes into it: it clones (or, for an update, fetches into a hard-linked copy of the
current clone) into ``<id>.fetch-<random>`` beside it, and then, inside one transaction that
first checks the run's claim under the job's row lock (``StageClaim.check``: the fencing token),
exchanges the two directories and records the fetched commit. The staging directory is locked
(``flock``) while its run lives, so the next run removes only what dead runs left behind. A worker that lost its claim
while it fetched (paused, cut off, reaped, its job resumed on another host) finds the check
refused when it comes back: its staging directory is removed, the clone and the job stay as
the run that took over left them. Whoever reads the clone meanwhile sees the old one or the new
one, never a half-written one.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from indexing.clone_paths import lock_of, remove_stale_staging, staging_dir
from reposearch.data_folder import private_folder

logger = logging.getLogger(__name__)

_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


@contextlib.contextmanager
def staging_area(target: Path) -> Iterator[Path]:
    """A staging directory for one fetch, locked (``flock`` on ``<staging>.lock``) while the
    run lives and removed when it ends; leftovers of runs that died are removed first."""
    private_folder(target.parent)
    remove_stale_staging(target)
    staging = staging_dir(target)
    lock = lock_of(staging)
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: nobody else has it
        try:
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # gone already once moved into place
            lock.unlink(missing_ok=True)


def copy_for_update(target: Path, staging: Path) -> None:
    """A copy of the clone to fetch an update into: object files (never changed once written)
    are hard-linked, everything else (refs, HEAD, shallow, config) copied."""

    def link_or_copy(source: str, destination: str) -> None:
        if Path(source).relative_to(target).parts[0] == "objects":
            with contextlib.suppress(OSError):
                os.link(source, destination)
                return
        shutil.copy2(source, destination)

    shutil.copytree(target, staging, copy_function=link_or_copy)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two directories atomically (``renameat2(RENAME_EXCHANGE)``); False when the system
    or the file system cannot."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second),
                       _RENAME_EXCHANGE)  # fmt: skip
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(first))


def move_into_place(staging: Path, target: Path) -> None:
    """Make ``staging`` the clone at ``target``; the clone it replaces is deleted.

    Call it inside the transaction whose claim check passed, so no other run's move can come
    between the check and this."""
    if not target.exists():
        os.rename(staging, target)
        return
    if _exchange(staging, target):
        shutil.rmtree(staging, ignore_errors=True)  # the old clone, now at the staging name
        return
    old = staging_dir(target)  # a crash between the renames leaves it to remove_stale_staging
    os.rename(target, old)
    os.rename(staging, target)
    shutil.rmtree(old, ignore_errors=True)
