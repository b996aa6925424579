"""Term posting lists kept in a process's memory between searches (``postings_memory`` ranks them).

The term postings (``indexing.postings_format``) of a repository generation do not change
once built, so a process keeps the lists its searches read (``ListCache``: least recently used
first out, ``REPO_SEARCH_POSTINGS_MEMORY_MB`` in all) under a key that names what they were built
from -- repository, generation, and the transaction that built its statistics (``xmin`` of its
facet rows, new with every rebuild) -- and a search whose lists are all there reads none of them
from the database. Lists not kept yet are read whole, in one statement (``kept_lists``); those
of a search too large to keep serve that search only.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db import DatabaseError
from django.db.backends.utils import CursorWrapper

from indexing.postings_format import HEADER, RECORD, buckets, list_base
from search.lru import Lru
from search.retrieval.db import array_literal, binary_cursor, search_cursor

logger = logging.getLogger(__name__)
ENTRY_OVERHEAD = 200  # bytes a cached list costs beyond its arrays (key, object, arrays' headers)


@dataclass(frozen=True)
class TermList:
    """Every record of one term in one repository generation, all kinds of chunk: the chunk id
    less the generation's first (``offsets``) and the record's word (``words``), native order."""

    offsets: np.ndarray  # uint32
    words: np.ndarray  # uint32
    base: int  # the generation's first chunk id (the lists' header)
    span: int  # largest offset + 1 (0: the term is not in this generation)
    nbytes: int = 0  # what keeping it costs

    @classmethod
    def of(cls, offsets: np.ndarray, words: np.ndarray, base: int) -> TermList:
        span = int(offsets.max()) + 1 if len(offsets) else 0
        size = offsets.nbytes + words.nbytes + ENTRY_OVERHEAD
        return cls(offsets, words, base, span, size)


EMPTY = TermList.of(np.zeros(0, np.uint32), np.zeros(0, np.uint32), 0)
# repository (its UUID as an int: hashed in C), generation, statistics' build, term
Key = tuple[int, int, int, str]


class ListCache(Lru[Key, TermList]):
    """Whole term lists by ``Key``, the least recently used dropped past ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        super().__init__(budget, weight=lambda value: value.nbytes)


_CACHE: ListCache | None = None
_CACHE_LOCK = threading.Lock()


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
    """The whole lists of some terms in some repositories, from this process's memory."""

    repositories: list[tuple[UUID, int, int]]  # (id, generation, statistics' build)
    terms: list[str]
    lists: list[list[TermList]]  # per repository, per term
    loaded: int  # lists read from the database for this search (not in memory yet)

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
    """The whole lists of ``terms`` in ``repositories`` ((id, generation, statistics' build)),
    those not in memory read in one statement. They are kept for the next searches when they
    fit in half of the cache (more would push out everything else, and not stay); else, or
    with the cache off, they serve this search only. None when they cannot be read: ids of a
    generation spanning 2^32 or more, or the statement failed (e.g. timed out)."""
    store = cache()
    keys = [(r.int, g, b, term) for r, g, b in repositories for term in terms]
    found = store.get_many(keys) if store.budget else {}
    missing = [key for key in keys if key not in found]
    loaded: dict[Key, TermList] = {}
    if missing:
        try:
            with search_cursor(timeout_ms) as cursor:
                loaded = _load(cursor, missing)
        except Unsupported:
            return None
        except DatabaseError:
            logger.warning("posting lists not read whole", exc_info=True)
            return None
        found.update(loaded)
    if sum(v.nbytes for v in found.values()) <= store.budget // 2:
        store.put_many(loaded)
    lists = [[found[(r.int, g, b, term)] for term in terms] for r, g, b in repositories]
    return KeptLists(list(repositories), list(terms), lists, len(missing))


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
