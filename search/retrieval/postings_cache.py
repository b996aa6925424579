"""Term posting lists kept between searches (``postings_memory`` ranks them).

The term postings (``indexing.postings_format``) of a repository generation do not change
once built, so they are kept under a key that names what they were built from -- repository,
generation, and the transaction that built its statistics (``xmin`` of its facet rows, new with
every rebuild) -- and a search whose lists are all kept reads none of them from the database.
They are kept in pack files that every search process of the host maps (``postings_files``: one
copy in the page cache, however many processes; a process holds a mapping per pack and serves
the lists as views of it, the ``HOT_LISTS`` it used last at hand). The first process that needs
a list reads it from the database, in one statement for all the lists of its search
(``kept_lists``), and writes it to a pack under its generation's lock (``generation_locks``); the
others map that pack. A process that makes a generation's directory, and each process every
``SWEEP_SECONDS``, removes those of generations no longer live (``sweep_files``). Where packs
cannot be used (``REPO_SEARCH_POSTINGS_DIR=off``, a directory that cannot be written, another
process writing the same generation for longer than the statement's timeout), the lists read are
kept in this process's memory instead (``ListCache``: least recently used first out,
``REPO_SEARCH_POSTINGS_MEMORY_MB`` in all); those of a search too large for half of it serve that
search only.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError
from django.db.backends.utils import CursorWrapper

from indexing.postings_format import HEADER, RECORD, buckets, list_base
from search.lru import Lru
from search.retrieval import postings_files
from search.retrieval.db import array_literal, binary_cursor, reading_from, search_cursor
from search.retrieval.postings_files import Generation, StoredList
from search.retrieval.postings_hot import HotLists

logger = logging.getLogger(__name__)
ENTRY_OVERHEAD = 200  # bytes a cached list costs beyond its arrays (key, object, arrays' headers)
# Views of mapped lists a process keeps at hand (~0.6 kB each: key, object, arrays' headers; the
# pages are the host's page cache): a warm search finds them here at once; others are looked up
# in the packs' indexes (a few microseconds each). REPO_SEARCH_POSTINGS_LISTS_AT_HAND.
HOT_LISTS = int(settings.REPO_SEARCH_POSTINGS_LISTS_AT_HAND)
# A process sweeps the files of generations no longer live this often (~1 ms on 90 repositories),
# besides when it makes a new generation's directory: a deleted or retired repository makes none.
SWEEP_SECONDS = 300.0
_swept = [time.monotonic()]


class TermList(NamedTuple):
    """Every record of one term in one repository generation, all kinds of chunk: the chunk id
    less the generation's first (``offsets``) and the record's word (``words``), native order.
    (A tuple: a search makes one per list and generation, ~0.3 µs against ~1.2 for a frozen
    dataclass.)"""

    offsets: np.ndarray  # uint32
    words: np.ndarray  # uint32
    base: int  # the generation's first chunk id (the lists' header)
    span: int  # largest offset + 1 (0: the term is not in this generation)
    nbytes: int = 0  # what keeping it costs this process
    shared: bool = False  # its arrays are a mapped pack's: the host's page cache

    @classmethod
    def of(cls, offsets: np.ndarray, words: np.ndarray, base: int) -> TermList:
        """A list in this process's memory (read-only: the compiled pass is built for the
        read-only arrays of a mapped file, and must not meet a second type)."""
        span = int(offsets.max()) + 1 if len(offsets) else 0
        size = offsets.nbytes + words.nbytes + ENTRY_OVERHEAD
        offsets.flags.writeable = words.flags.writeable = False
        return cls(offsets, words, base, span, size)

    @classmethod
    def mapped(cls, stored: StoredList) -> TermList:
        """A list whose arrays are a mapped pack's (views: they cost this process only while a
        search holds them)."""
        offsets, words, base, span, _mapped = stored
        return tuple.__new__(cls, (offsets, words, base, span, ENTRY_OVERHEAD, True))


EMPTY = TermList.of(np.zeros(0, np.uint32), np.zeros(0, np.uint32), 0)
# repository (its UUID as an int: hashed in C), generation, statistics' build, term
Key = tuple[int, int, int, str]


class ListCache(Lru[Key, TermList]):
    """Whole term lists by ``Key``, the least recently used dropped past ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        super().__init__(budget, weight=lambda value: value.nbytes)


_CACHE: ListCache | None = None
_CACHE_LOCK = threading.Lock()
_HOT: HotLists[TermList] = HotLists(HOT_LISTS)
# a pack merged away or removed: the views of its generation let go, so it is unmapped
postings_files.on_unmapped(lambda generation: _HOT.drop(generation))


def cache() -> ListCache:
    """This process's cache (sized by ``REPO_SEARCH_POSTINGS_MEMORY_MB``; 0 keeps no list)."""
    global _CACHE
    with _CACHE_LOCK:
        budget = int(settings.REPO_SEARCH_POSTINGS_MEMORY_MB) * 1024 * 1024
        if _CACHE is None or _CACHE.budget != budget:
            _CACHE = ListCache(budget)
        return _CACHE


@dataclass
class KeptLists:
    """The whole lists of some terms in some repositories, mapped or in this process's memory."""

    repositories: list[tuple[UUID, int, int]]  # (id, generation, statistics' build)
    terms: list[str]
    lists: list[list[TermList]]  # per repository, per term
    loaded: int  # lists read from the database for this search (not kept yet)

    def document_frequencies(self) -> dict[str, int]:
        return {
            term: sum(len(row[j].offsets) for row in self.lists)
            for j, term in enumerate(self.terms)
        }


class Unsupported(Exception):
    """Lists the in-memory pass cannot rank (the SQL fallback of ``fulltext`` does)."""


def kept_lists(
    repositories: list[tuple[UUID, int, int]], terms: list[str], timeout_ms: int = 5000
) -> KeptLists | None:
    """The whole lists of ``terms`` in ``repositories`` ((id, generation, statistics' build)):
    in the host's packs, else in this process's memory, else read in one statement and written to
    the packs. Lists that cannot be written are kept in this process's
    memory when they fit in half of it (more would push out everything else, and not stay); else,
    or with ``REPO_SEARCH_POSTINGS_MEMORY_MB=0``, they serve this search only. None when they
    cannot be read: ids of a generation spanning 2^32 or more, or the statement failed (e.g. timed
    out)."""
    store, files = cache(), postings_files.root()
    keys = [(r.int, g, b, term) for r, g, b in repositories for term in terms]
    if files is not None:
        postings_files.release_gone()  # every few seconds: packs removed meanwhile unmapped
        if time.monotonic() - _swept[0] > SWEEP_SECONDS:  # a deleted repository's files too
            _sweep(files, timeout_ms)
    found = _HOT.get_many(keys) if files is not None else {}
    if files is not None and len(found) < len(keys):
        found.update(_mapped(postings_files.find(files, [k for k in keys if k not in found])))
    if store.budget and len(found) < len(keys):
        found.update(store.get_many([key for key in keys if key not in found]))
    missing = [key for key in keys if key not in found]
    read = 0
    if missing:
        try:
            more, read = _read(files, missing, timeout_ms)
        except Unsupported:
            return None
        except DatabaseError:
            logger.warning("posting lists not read whole", exc_info=True)
            return None
        found.update(more)
        unmapped = {key: value for key, value in more.items() if not value.shared}
        if sum(v.nbytes for v in found.values()) <= store.budget // 2:
            store.put_many(unmapped)
    lists = [[found[(r.int, g, b, term)] for term in terms] for r, g, b in repositories]
    return KeptLists(list(repositories), list(terms), lists, read)


def _mapped(stored: dict[Key, StoredList]) -> dict[Key, TermList]:
    """Lists from the host's packs (views of their mappings), kept at hand (``HOT_LISTS``)."""
    lists = {key: TermList.mapped(value) for key, value in stored.items()}
    _HOT.put_many(lists)
    return lists


def forget() -> None:
    """Keep no list: none at hand, no pack mapped, none in this process's memory."""
    _HOT.clear()
    postings_files.forget()
    cache().clear()


def _read(files: Path | None, keys: list[Key], timeout_ms: int) -> tuple[dict[Key, TermList], int]:
    """The lists of ``keys`` from the database, and how many were read there: written to the
    host's files (mapped copies returned) while this process holds their generations' locks;
    where it cannot, in memory. One another process wrote while this one waited is mapped."""
    if files is None:
        with search_cursor(timeout_ms) as cursor:
            return _load(cursor, keys), len(keys)
    generations = [(r, g, b) for r, g, b, _t in keys]
    with generation_locks(files, generations, timeout_ms) as (held, made):
        found = _mapped(postings_files.find(files, keys, fresh=True)) if held else {}
        still = [key for key in keys if key not in found]
        with search_cursor(timeout_ms) as cursor:
            loaded = _load(cursor, still) if still else {}
        found.update(loaded)
        if held and loaded:
            stored = {k: StoredList(v.offsets, v.words, v.base, v.span) for k, v in loaded.items()}
            found.update(_mapped(postings_files.write_lists(files, stored)))
    if made:  # a generation new on this host: those that are no longer live go
        _sweep(files, timeout_ms)
    return found, len(still)


def _sweep(files: Path, timeout_ms: int) -> None:
    started, _swept[0] = time.time(), time.monotonic()
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


def _load(cursor: CursorWrapper, keys: list[Key]) -> dict[Key, TermList]:
    """The whole lists of ``keys`` (long and packed, every kind), one statement; a key with no
    list holds ``EMPTY``. Raises Unsupported for ids past the first 2^32 of a generation."""
    generations = {(r, g): b for r, g, b, _t in keys}
    pairs = list(generations)
    terms = sorted({t for *_rest, t in keys})
    repositories = array_literal(UUID(int=r) for r, _g in pairs)
    sql = (
        "WITH g AS (SELECT * FROM unnest(%s::uuid[], %s::int[]) WITH ORDINALITY"
        "           AS g(repository_id, generation, n))"
        " SELECT g.n, p.term, p.part, p.postings"
        " FROM search_termpostings p JOIN g"
        "   ON g.repository_id = p.repository_id AND g.generation = p.generation"
        " WHERE p.repository_id = ANY(%s::uuid[]) AND p.term = ANY(%s::text[])"
        " UNION ALL"
        " SELECT g.n, u.term, u.part, u.postings"
        " FROM search_termbucket b JOIN g"
        "   ON g.repository_id = b.repository_id AND g.generation = b.generation"
        " CROSS JOIN LATERAL unnest(b.terms, b.parts, b.postings) AS u(term, part, postings)"
        " WHERE b.repository_id = ANY(%s::uuid[]) AND b.bucket = ANY(%s::int[])"
        "   AND u.term = ANY(%s::text[])"
    )
    params: list[Any] = [
        repositories, array_literal(g for _r, g in pairs), repositories, terms, repositories,
        array_literal(buckets(terms)), terms,
    ]  # fmt: skip
    with binary_cursor(cursor) as binary:
        binary.execute(sql, params)
        rows = binary.fetchall()
    parts: dict[tuple[int, str], list[tuple[int, bytes]]] = {}
    for n, term, part, value in rows:
        if part >> 2:
            raise Unsupported("chunk ids past the first 2^32 of a generation")
        parts.setdefault((int(n) - 1, term), []).append((int(part), bytes(value)))
    wanted = set(keys)
    loaded = {}
    for (position, term), values in parts.items():
        repository, generation = pairs[position]
        key = (repository, generation, generations[(repository, generation)], term)
        if key in wanted:
            loaded[key] = _decoded(values)
    return {key: loaded.get(key, EMPTY) for key in keys}


def _decoded(values: list[tuple[int, bytes]]) -> TermList:
    bases = {list_base(value) for _part, value in values}
    if len(bases) != 1:
        raise Unsupported("lists of one generation with different bases")
    records = np.concatenate([np.frombuffer(value, dtype=RECORD, offset=HEADER)
                              for _part, value in sorted(values)])  # fmt: skip
    return TermList.of(records["id"].astype(np.uint32), records["word"].astype(np.uint32),
                       bases.pop())  # fmt: skip


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
                    directory.mkdir(parents=True, exist_ok=True)
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
