"""Term posting lists in files that every search process of a host maps: one copy, in the page
cache, however many web processes there are (``postings_cache.kept_lists`` decides when).

Layout (``root()``: ``REPO_SEARCH_POSTINGS_DIR``, by default ``<REPO_SEARCH_DATA_DIR>/postings``)::

    <root>/<repository uuid>/<generation>-<statistics' build>/<sha256(term)[:32]>.list
    <root>/<repository uuid>/<generation>-<statistics' build>/.lock

named exactly like the lists' cache key (the build is ``xmin`` of the generation's facet rows,
new with every rebuild), so a rebuilt generation is never served an old list. A file holds one
decoded list, ready for the pass: a header (``HEADER``: magic, version, records, base, span,
CRC-32 of the arrays, the term's length; then the term) and the records' ids less the base, then
their words, both native ``uint32``. ``map_list`` checks all of it (a truncated or corrupt file is
refused, never ranked) and maps the arrays read-only, zero-copy (a file under ``MAP_MIN_BYTES``
is read instead: small lists cost less as copies than as mappings).

The first process that needs a list writes it (``write_lists``: a temporary name, ``fsync``,
``rename``) while it holds its generation's lock (``generation_locks``: ``flock`` on ``.lock``), so
two processes never read the same lists from the database and write them at once. A process that
makes a generation's directory sweeps the root (``sweep``): the directories of generations
whose statistics are no longer live (rebuilt, retired, repository deleted) go. Disk use is thus
at most one decoded copy of the searched lists of the live generations.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import mmap
import os
import shutil
import struct
import time
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import NamedTuple
from uuid import UUID

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)
MAGIC, VERSION = b"RSPL", 1
# magic, version, records, base, span, CRC-32 of the arrays, the term's length in bytes (native
# order: a file written on one host is read on that host only; another byte order fails MAGIC's
# neighbours, not silently)
HEADER = struct.Struct("=4sIQqQII")
SUFFIX = ".list"
# A smaller file is read, not mapped: a mapping costs the process about 3 kB (kernel and Python
# objects) whatever the list's size, more than a copy of a list under a page.
MAP_MIN_BYTES = 4096
_warned: set[str] = set()


class StoredList(NamedTuple):
    offsets: np.ndarray  # uint32, read-only
    words: np.ndarray  # uint32, read-only
    base: int
    span: int
    mapped: bool = False  # the arrays are a mapped file's (else a copy in this process)


# repository (its UUID as an int), generation, statistics' build, term: ``postings_cache.Key``
Key = tuple[int, int, int, str]
Generation = tuple[int, int, int]


def root() -> Path | None:
    """Where the files live (None: ``REPO_SEARCH_POSTINGS_DIR=off``, each process reads its own
    lists from the database)."""
    value = getattr(settings, "REPO_SEARCH_POSTINGS_DIR", None)
    if value is None or str(value).strip() == "":
        return Path(settings.REPO_SEARCH_DATA_DIR) / "postings"
    if str(value).strip().lower() == "off":
        return None
    return Path(value).expanduser()


def generation_dir(base: Path, key: Generation | Key) -> Path:
    return base / str(UUID(int=key[0])) / f"{key[1]}-{key[2]}"


def list_path(base: Path, key: Key) -> Path:
    name = hashlib.sha256(key[3].encode()).hexdigest()[:32]
    return generation_dir(base, key) / (name + SUFFIX)


def warn_once(reason: str, *args: object) -> None:
    """A warning per process and reason (a directory that cannot be written is not news at every
    search)."""
    if reason not in _warned:
        _warned.add(reason)
        logger.warning(reason + "; posting lists read from the database instead", *args)


def _data_start(term: bytes) -> int:
    return (HEADER.size + len(term) + 7) // 8 * 8


def encode(term: str, found: StoredList) -> bytes:
    """The file of one list (``map_list`` reads it back)."""
    name = term.encode()
    offsets = np.ascontiguousarray(found.offsets, dtype=np.uint32)
    words = np.ascontiguousarray(found.words, dtype=np.uint32)
    crc = zlib.crc32(words.data, zlib.crc32(offsets.data))
    head = HEADER.pack(MAGIC, VERSION, len(offsets), found.base, found.span, crc, len(name))
    padding = b"\0" * (_data_start(name) - len(head) - len(name))
    return head + name + padding + offsets.tobytes() + words.tobytes()


class Corrupt(Exception):
    """A list's file that does not hold what its header and name say."""


def map_list(path: Path, term: str) -> StoredList | None:
    """The list in ``path``, its arrays mapped read-only, or read when the file is smaller than
    ``MAP_MIN_BYTES`` (None: no such file). Raises Corrupt for a file that is not whole: wrong
    magic or version, another term, a length that is not the header's, arrays whose CRC-32 is
    not the header's."""
    mapped: mmap.mmap | bytes
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size < HEADER.size:
                raise Corrupt(f"{size} bytes, shorter than a header")
            if size < MAP_MIN_BYTES:
                mapped = file.read()
            else:
                mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        return None
    magic, version, count, base, span, crc, length = HEADER.unpack_from(mapped, 0)
    if magic != MAGIC or version != VERSION:
        raise Corrupt(f"magic {magic!r} version {version}")
    name = term.encode()
    start = _data_start(name)
    if length != len(name) or mapped[HEADER.size : HEADER.size + length] != name:
        raise Corrupt("another term's list")
    if size != start + 8 * count:
        raise Corrupt(f"{size} bytes, the header says {start + 8 * count}")
    with memoryview(mapped) as view:
        if zlib.crc32(view[start:]) != crc:
            raise Corrupt("arrays do not match their checksum")
    offsets = np.frombuffer(mapped, np.uint32, count, start)
    words = np.frombuffer(mapped, np.uint32, count, start + 4 * count)
    if count and int(offsets.max()) + 1 != span:
        raise Corrupt("span is not the records'")
    return StoredList(offsets, words, base, span, isinstance(mapped, mmap.mmap))


def map_lists(base: Path, keys: list[Key]) -> dict[Key, StoredList]:
    """Those of ``keys`` whose file is there and whole, mapped; a corrupt one is left out (with a
    warning) for the caller to read again and replace."""
    found = {}
    for key in keys:
        path = list_path(base, key)
        try:
            stored = map_list(path, key[3])
        except (Corrupt, OSError, ValueError) as error:
            logger.warning("posting list file %s refused (%s); read again", path, error)
            continue
        if stored is not None:
            found[key] = stored
    return found


def write_lists(base: Path, lists: dict[Key, StoredList]) -> dict[Key, StoredList]:
    """Write each list to its file (temporary name, ``fsync``, ``rename``; then the directory
    ``fsync``) and map it back: the mapped copies of those written. A list that cannot be written
    (a directory that is not writable, a full disk) is left out, with a warning."""
    written, directories = [], set()
    for key, found in lists.items():
        path = list_path(base, key)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            with open(temporary, "wb") as file:
                file.write(encode(key[3], found))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except OSError as error:
            warn_once("posting list files not written in %s (%s)", path.parent, error)
            temporary.unlink(missing_ok=True)
            continue
        written.append(key)
        directories.add(path.parent)
    for directory in directories:
        _fsync_directory(directory)
    return map_lists(base, written)


def _fsync_directory(directory: Path) -> None:
    try:
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    except OSError:
        pass  # the renames are done; only their durability after a crash is at stake


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
            directory = generation_dir(base, generation)
            try:
                if not directory.is_dir():
                    directory.mkdir(parents=True, exist_ok=True)
                    made = True
                descriptor = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as error:
                warn_once("posting list directory %s not writable (%s)", directory, error)
                yield False, made
                return
            stack.callback(os.close, descriptor)
            if not _lock(descriptor, deadline):
                logger.info("posting lists of %s being written by another process", directory)
                yield False, made
                return
        yield True, made


def _lock(descriptor: int, deadline: float) -> bool:
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


def sweep(base: Path, live: set[tuple[str, int, int]], started: float) -> int:
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
        if not _lock(descriptor, 0):
            return 0
        if stale:
            shutil.rmtree(directory, ignore_errors=True)
            return 1
        for leftover in directory.glob("*.tmp"):
            leftover.unlink(missing_ok=True)
        return 0
    finally:
        os.close(descriptor)
