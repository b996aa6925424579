"""Term posting lists kept between searches (``postings_memory`` ranks them).

The term postings (``indexing.postings_format``) of a repository generation do not change
once built, so they are kept under a key that names what they were built from -- repository,
generation, and the transaction that built its statistics (``xmin`` of its facet rows, new with
every rebuild) -- and a search whose lists are all kept reads none of them from the database.
They are kept in pack files that every search process of the host maps (``postings_files``: one
copy in the page cache, however many processes; a process holds a mapping per pack and serves
the lists as views of it, the ``HOT_LISTS`` it used last at hand). The first process that needs
a list reads it from the database, in one statement for all the lists of its search
(``kept_lists``), and writes it to a pack under its generation's lock; the others map that
pack. A process that makes a generation's directory, and each process every ``SWEEP_SECONDS``,
removes those of generations no longer live (``postings_sweep``). Where packs
cannot be used (``REPO_SEARCH_POSTINGS_DIR=off``, a directory that cannot be written, another
process writing the same generation for longer than the statement's timeout), the lists read are
kept in this process's memory instead (``ListCache``: least recently used first out,
``REPO_SEARCH_POSTINGS_MEMORY_MB`` in all); those of a search too large for half of it serve that
search only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db import DatabaseError
from django.db.backends.utils import CursorWrapper

from indexing.postings_format import HEADER, RECORD, buckets, list_base
from search.lru import Lru
from search.retrieval import postings_files, postings_sweep
from search.retrieval.db import array_literal, binary_cursor, search_cursor
from search.retrieval.postings_files import Generation, StoredList
from search.retrieval.postings_sweep import generation_locks

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
V = TypeVar("V")


class HotLists(Generic[V]):
    """The lists a process served last, kept at hand: up to ``budget`` views of mapped packs by
    key, the least recently used out first. A view keeps its pack mapped (and the pages of a
    file that may have been merged away), so a generation's all go at once by ``drop``, which
    ``postings_files`` calls when it unmaps a pack of it (thread-safe)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._kept: OrderedDict[Key, V] = OrderedDict()
        # each generation's keys put since the index was last rebuilt (some gone since: a list
        # pushed out does not pay to leave the index; it is rebuilt past twice the budget)
        self._index: dict[Generation, set[Key]] = {}
        self._indexed = 0
        self._lock = threading.Lock()

    def get_many(self, keys: list[Key]) -> dict[Key, V]:
        found = {}
        kept = self._kept
        with self._lock:
            for key in keys:
                value = kept.get(key)
                if value is not None:
                    kept.move_to_end(key)
                    found[key] = value
        return found

    def put_many(self, entries: dict[Key, V]) -> None:
        kept, index = self._kept, self._index
        last, keys = None, set()
        with self._lock:
            for key, value in entries.items():
                if key in kept:
                    kept.move_to_end(key)
                else:
                    if key[:3] != last:  # a search's keys come by generation
                        last = key[:3]
                        keys = index.get(last) or index.setdefault(last, set())
                    keys.add(key)
                    self._indexed += 1
                kept[key] = value
            while len(kept) > self.budget:
                kept.popitem(last=False)
            if self._indexed > 4 * self.budget + 1024:
                self._reindex()

    def drop(self, generation: Generation) -> int:
        """Let go of every list of ``generation``: how many."""
        with self._lock:
            keys = self._index.pop(generation, set())
            self._indexed -= len(keys)
            return sum(self._kept.pop(key, None) is not None for key in keys)

    def _reindex(self) -> None:
        self._index = {}
        for key in self._kept:
            self._index.setdefault(key[:3], set()).add(key)
        self._indexed = len(self._kept)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._index.clear()
            self._indexed = 0

    def __len__(self) -> int:
        return len(self._kept)


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
    _swept[0] = time.monotonic()
    postings_sweep.sweep(files, timeout_ms)


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
