"""The housekeeping of the posting-list pack directories (``postings_files``): a generation's
lock while its packs are written (``generation_locks``: ``flock`` on its ``.lock``), and the
sweep that removes the directories of generations no longer live (``sweep``), with what dead
writers left behind. ``postings_cache`` calls them when it writes lists it read from the
database, and every ``postings_cache.SWEEP_SECONDS``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from django.db import DEFAULT_DB_ALIAS, DatabaseError

from reposearch.data_folder import private_folder
from search.retrieval import postings_files
from search.retrieval.db import reading_from, search_cursor
from search.retrieval.postings_files import Generation

logger = logging.getLogger(__name__)


def sweep(files: Path, timeout_ms: int) -> None:
    """Remove the directories of generations no longer live (``sweep_files``), reading which
    are live on the primary, and unmap their packs in this process."""
    started = time.time()
    try:  # what is live now: on the primary (a replica may not have replayed the newest builds)
        with reading_from(DEFAULT_DB_ALIAS), search_cursor(timeout_ms) as cursor:
            cursor.execute(
                "SELECT repository_id, generation, max(xmin::text::bigint)"
                " FROM search_chunkfacetstat GROUP BY repository_id, generation"
            )
            live = {(str(r), int(g), int(b)) for r, g, b in cursor.fetchall()}
        if sweep_files(files, live, started):
            postings_files.release_gone(now=True)  # none of their packs kept mapped by this process
    except (OSError, DatabaseError):
        logger.warning("posting list files not swept", exc_info=True)


@contextmanager
def generation_locks(
    base: Path, generations: list[Generation], timeout_ms: int
) -> Iterator[tuple[bool, bool]]:
    """Hold the lock of each generation's directory (made when missing; sorted order, so two
    processes never wait for each other), trying for up to ``timeout_ms`` in all. Yields (held,
    made): whether every lock is held (else the caller writes nothing), and whether some
    directory was made here (a new generation on this host: time to ``sweep``)."""
    deadline = time.monotonic() + timeout_ms / 1000
    made = False
    with ExitStack() as stack:
        for generation in sorted(set(generations)):
            directory = postings_files.generation_dir(base, generation)
            try:
                if not directory.is_dir():
                    private_folder(directory)
                    made = True
                descriptor = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as error:
                postings_files.warn_once(
                    "posting list directory %s not writable (%s)", directory, error
                )
                yield False, made
                return
            stack.callback(os.close, descriptor)
            if not lock(descriptor, deadline):
                logger.info("posting lists of %s being written by another process", directory)
                yield False, made
                return
        yield True, made


def lock(descriptor: int, deadline: float) -> bool:
    """``flock`` (per open file, so two threads of a process exclude each other too), waiting
    until ``deadline``; released when the descriptor is closed."""
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)


def sweep_files(base: Path, live: set[tuple[str, int, int]], started: float) -> int:
    """Remove the directories of generations not in ``live`` ((repository, generation,
    statistics' build) of every generation with statistics, read after ``started``: rebuilt,
    retired, or their repository deleted), and leftovers of writers that died; the directories
    removed. One written to since ``started`` is left for the next sweep (its generation may be
    newer than ``live``), and so is one whose lock another process holds."""
    removed = 0
    for repository in _subdirectories(base):
        for directory in _subdirectories(repository):
            generation, _dash, build = directory.name.partition("-")
            if not (generation.isdigit() and build.isdigit()):
                continue  # not ours
            stale = (repository.name, int(generation), int(build)) not in live
            removed += _clean(directory, stale=stale, started=started)
        with contextlib.suppress(OSError):
            repository.rmdir()  # only when empty
    return removed


def _subdirectories(directory: Path) -> list[Path]:
    try:
        return [d for d in directory.iterdir() if d.is_dir() and not d.is_symlink()]
    except OSError:
        return []


def _clean(directory: Path, *, stale: bool, started: float) -> int:
    """A stale directory removed, or a live one's temporary files, when no process holds its
    lock."""
    try:
        if stale and directory.stat().st_mtime >= started:
            return 0
        descriptor = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return 0
    try:
        if not lock(descriptor, 0):
            return 0
        if stale:
            shutil.rmtree(directory, ignore_errors=True)
            return 1
        for leftover in [*directory.glob("*.tmp"), *directory.glob("*.list")]:
            leftover.unlink(missing_ok=True)  # a dead writer's, or a list of the files before packs
        return 0
    finally:
        os.close(descriptor)
