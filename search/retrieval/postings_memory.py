"""The exact BM25 top-k from whole posting lists kept in memory between searches.

The term postings (``search.retrieval.postings_format``) of a repository generation do not change
once built, so a process keeps the lists its searches read (``ListCache``: least recently used
first out, ``REPO_SEARCH_POSTINGS_MEMORY_MB`` in all) under a key that names what they were built
from -- repository, generation, and the transaction that built its statistics (``xmin`` of its
facet rows, new with every rebuild) -- and a search whose lists are all there reads none of them
from the database.

Ranking then reads every record of the query's lists in one compiled pass (``_accumulate``: a
score and the lists seen in per chunk, in dense arrays indexed by chunk id, one span per
repository) and keeps the best ``limit`` of each list of the pass (``_select``), so the top-k is
exact by construction: no bounds, no rounds, no chunk read by id to learn its score. The only
statement left is the one that applies the scope and permission filters to the chunks ranked
(languages and paths are not in the postings; tests and docs are), which also drops chunks of
a generation retired in the meantime.

Scores are computed as ``postings_check.check_chunks`` computes them (the same operations in the
same order), so a chunk scores the same here as read by id. A search this cannot serve (lists
larger than half the cache, ids of one generation spanning 2^32 or more, the cache turned off)
returns None and is ranked by the rounds of ``search.retrieval.postings``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db.backends.utils import CursorWrapper
from numba import njit

from search.retrieval.db import array_literal, binary_cursor, search_cursor
from search.retrieval.postings_bounds import Want
from search.retrieval.postings_format import B, HEADER, K1, RECORD, buckets, list_base
from search.retrieval.scope import LIVE_CHUNKS_SQL, ScopeFilter

ENTRY_OVERHEAD = 200  # bytes a cached list costs beyond its arrays (key, object, arrays' headers)


@dataclass(frozen=True)
class TermList:
    """Every record of one term in one repository generation, all kinds of chunk: the chunk id
    less the generation's first (``offsets``) and the record's word (``words``), native order."""

    offsets: np.ndarray  # uint32
    words: np.ndarray  # uint32
    base: int  # the generation's first chunk id (the lists' header)
    span: int  # largest offset + 1 (0: the term is not in this generation)

    @property
    def nbytes(self) -> int:
        return self.offsets.nbytes + self.words.nbytes + ENTRY_OVERHEAD


EMPTY = TermList(np.zeros(0, np.uint32), np.zeros(0, np.uint32), 0, 0)
Key = tuple[UUID, int, int, str]  # repository, generation, statistics' build, term


class ListCache:
    """Whole term lists by ``Key``, the least recently used dropped past ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._lists: OrderedDict[Key, TermList] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, keys: list[Key]) -> dict[Key, TermList]:
        found = {}
        with self._lock:
            for key in keys:
                value = self._lists.get(key)
                if value is not None:
                    self._lists.move_to_end(key)
                    found[key] = value
        return found

    def put(self, entries: dict[Key, TermList]) -> None:
        with self._lock:
            for key, value in entries.items():
                old = self._lists.pop(key, None)
                if old is not None:
                    self.used -= old.nbytes
                self._lists[key] = value
                self.used += value.nbytes
            while self.used > self.budget and self._lists:
                _key, dropped = self._lists.popitem(last=False)
                self.used -= dropped.nbytes

    def clear(self) -> None:
        with self._lock:
            self._lists.clear()
            self.used = 0

    def __len__(self) -> int:
        return len(self._lists)


_CACHE: ListCache | None = None
_CACHE_LOCK = threading.Lock()


def cache() -> ListCache:
    """This process's cache (sized by ``REPO_SEARCH_POSTINGS_MEMORY_MB``; 0 turns it off)."""
    global _CACHE
    with _CACHE_LOCK:
        budget = int(settings.REPO_SEARCH_POSTINGS_MEMORY_MB) * 1024 * 1024
        if _CACHE is None or _CACHE.budget != budget:
            _CACHE = ListCache(budget)
        return _CACHE


@dataclass
class MemoryTopK:
    ranked: list[list[tuple[int, float]]]  # per list of the pass, (chunk id, score) best first
    postings_read: int  # records ranked
    checked: int  # chunks whose scope was checked in the database
    lists_loaded: int  # lists read from the database (not in the cache)


class Unsupported(Exception):
    """Lists this path cannot rank (the rounds can)."""


def memory_top_k(
    terms: list[str],
    idfs: list[float],
    informative: list[str],
    repositories: list[tuple[UUID, int, int]],
    scopes: list[ScopeFilter],
    wants: list[Want],
    *,
    average: float,
    all_terms_boost: float,
    timeout_ms: int,
) -> MemoryTopK | None:
    """For each of ``wants`` (and its scope in ``scopes``), its ``limit`` best chunks by BM25
    (score desc, id asc) over ``repositories`` ((id, generation, statistics' build) of each
    repository in scope with statistics), or None when these lists cannot be ranked here."""
    store = cache()
    if not store.budget or not terms:
        return None
    keys = [(r, generation, built, term) for r, generation, built in repositories for term in terms]
    found = store.get(keys)
    missing = [key for key in keys if key not in found]
    with search_cursor(timeout_ms) as cursor:
        if missing:
            try:
                loaded = _load(cursor, missing)
            except Unsupported:
                return None
            if sum(v.nbytes for v in loaded.values()) > store.budget // 2:
                return None  # would push out everything else, and not stay
            store.put(loaded)
            found.update(loaded)
        lists = [[found[(r, g, b, term)] for term in terms] for r, g, b in repositories]
        if sum(v.nbytes for row in lists for v in row) > store.budget // 2:
            return None
        informative_mask = sum(1 << terms.index(w) for w in informative if w in terms)
        boost = 1.0 + all_terms_boost if informative_mask else 1.0
        admitted = np.zeros(4, dtype=np.bool_)
        for kind in range(4):
            admitted[kind] = any(
                bool(w.admits(np.asarray([kind], dtype=np.int64))[0]) for w in wants
            )
        pool = _Pool.of(lists)
        read = 0
        for j, idf in enumerate(idfs):  # term by term: each chunk's sum in the order of terms
            coefficient = idf * (K1 + 1)
            for r, row in enumerate(lists):
                if row[j].span:
                    read += _accumulate(
                        pool.scores, pool.masks, pool.kinds, row[j].offsets, row[j].words,
                        int(pool.starts[r]), coefficient, average, 1 << j, admitted,
                    )  # fmt: skip
        ranked, checked = [], 0
        for want, scope in zip(wants, scopes, strict=True):
            best, count = _best_in_scope(cursor, pool, want, scope, informative_mask, boost)
            ranked.append(best)
            checked += count
    return MemoryTopK(ranked=ranked, postings_read=read, checked=checked, lists_loaded=len(missing))


@dataclass
class _Pool:
    """Per chunk of the repositories' spans: score so far, lists seen in, kind."""

    scores: np.ndarray
    masks: np.ndarray
    kinds: np.ndarray
    starts: np.ndarray  # where each repository's span starts (and the end, last)
    bases: np.ndarray  # each repository's first chunk id

    @classmethod
    def of(cls, lists: list[list[TermList]]) -> _Pool:
        spans = [max((v.span for v in row), default=0) for row in lists]
        bases = [next((v.base for v in row if v.span), 0) for row in lists]
        starts = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(spans, out=starts[1:])
        size = int(starts[-1])
        return cls(
            scores=np.zeros(size, dtype=np.float64),
            masks=np.zeros(size, dtype=np.int32),
            kinds=np.zeros(size, dtype=np.int8),
            starts=starts,
            bases=np.asarray(bases, dtype=np.int64),
        )


def _best_in_scope(
    cursor: CursorWrapper,
    pool: _Pool,
    want: Want,
    scope: ScopeFilter,
    informative_mask: int,
    boost: float,
) -> tuple[list[tuple[int, float]], int]:
    """The best ``want.limit`` chunks of ``want``'s kinds that ``scope``'s filters keep: the
    best ones are checked in the database, more of them (8x) while too many were filtered out."""
    dead = np.zeros(len(pool.scores), dtype=np.bool_)
    accepted: set[int] = set()
    checked = 0
    depth = want.limit
    while True:
        ids, scores, slots = _select(
            pool.scores, pool.masks, pool.kinds, pool.starts, pool.bases, dead,
            informative_mask, boost, want.excluded_flags, want.wanted_flags, depth,
        )  # fmt: skip
        order = np.lexsort((ids, -scores))
        ids, scores, slots = ids[order], scores[order], slots[order]
        unknown = [int(i) for i in ids if int(i) not in accepted]
        if unknown:
            checked += len(unknown)
            kept = _in_scope(cursor, unknown, scope)
            accepted |= kept
            for chunk_id, slot in zip(ids.tolist(), slots.tolist(), strict=True):
                if chunk_id not in accepted:
                    dead[slot] = True
        best = [(i, s) for i, s in zip(ids.tolist(), scores.tolist(), strict=True) if i in accepted]
        if len(best) >= want.limit or len(ids) < depth:
            return best[: want.limit], checked
        depth *= 8


def _in_scope(cursor: CursorWrapper, ids: list[int], scope: ScopeFilter) -> set[int]:
    """``ids`` that are live chunks of the repositories in scope, through its filters."""
    cursor.execute(
        f"SELECT c.id FROM indexing_chunk c {LIVE_CHUNKS_SQL}"  # noqa: S608
        f" WHERE c.id = ANY(%s::bigint[]) AND r.id = ANY(%s::uuid[]) AND {scope.sql}",
        [array_literal(ids), array_literal(scope.repository_ids), *scope.params],
    )
    return {int(row[0]) for row in cursor.fetchall()}


def _load(cursor: CursorWrapper, keys: list[Key]) -> dict[Key, TermList]:
    """The whole lists of ``keys`` (long and packed, every kind), one statement; a key with no
    list holds ``EMPTY``. Raises Unsupported for ids past the first 2^32 of a generation."""
    generations = {(r, g): b for r, g, b, _t in keys}
    pairs = list(generations)
    terms = sorted({t for *_rest, t in keys})
    repositories = array_literal(r for r, _g in pairs)
    sql = (
        "WITH g AS (SELECT * FROM unnest(%s::uuid[], %s::int[]) WITH ORDINALITY"  # noqa: S608
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
    params = [
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
    offsets = records["id"].astype(np.uint32)
    span = int(offsets.max()) + 1 if len(offsets) else 0
    return TermList(offsets, records["word"].astype(np.uint32), bases.pop(), span)


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _accumulate(
    scores: np.ndarray, masks: np.ndarray, kinds: np.ndarray, offsets: np.ndarray,
    words: np.ndarray, start: int, coefficient: float, average: float, bit: int,
    admitted: np.ndarray,
) -> int:  # fmt: skip
    """Add one list's contributions (``postings_format.saturation`` times ``coefficient``, in
    the same operations) to its chunks' scores; returns the records read."""
    for i in range(offsets.shape[0]):
        word = np.int64(words[i])
        kind = (word >> 14) & 3
        if not admitted[kind]:
            continue
        slot = start + np.int64(offsets[i])
        tf = np.float64(word & 0x3FFF) / 2.0
        length = max(word >> 16, 1)
        norm = K1 * (1 - B + B * np.float64(length) / average)
        scores[slot] += coefficient * (tf / (tf + norm))
        masks[slot] |= bit
        kinds[slot] = kind
    return offsets.shape[0]


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _worse(score: float, chunk: int, other_score: float, other_chunk: int) -> bool:
    return score < other_score or (score == other_score and chunk > other_chunk)


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _select(
    scores: np.ndarray, masks: np.ndarray, kinds: np.ndarray, starts: np.ndarray,
    bases: np.ndarray, dead: np.ndarray, informative: int, boost: float, excluded: int,
    wanted: int, limit: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The ``limit`` best chunks (score desc, id asc; any order) seen in some list, of the kinds
    admitted and not ``dead``: their ids, scores (with the all-words boost) and slots. A heap
    whose root is the worst kept."""
    heap_score = np.empty(limit, dtype=np.float64)
    heap_id = np.empty(limit, dtype=np.int64)
    heap_slot = np.empty(limit, dtype=np.int64)
    size = 0
    for r in range(bases.shape[0]):
        for slot in range(starts[r], starts[r + 1]):
            mask = masks[slot]
            if mask == 0 or dead[slot]:
                continue
            kind = kinds[slot]
            if kind & excluded or (wanted and not kind & wanted):
                continue
            score = scores[slot]
            if informative and (mask & informative) == informative:
                score = score * boost
            chunk = bases[r] + slot - starts[r]
            if size < limit:
                at = size
                size += 1
                while at > 0:  # up while worse than the parent
                    parent = (at - 1) // 2
                    if not _worse(score, chunk, heap_score[parent], heap_id[parent]):
                        break
                    heap_score[at], heap_id[at], heap_slot[at] = (
                        heap_score[parent], heap_id[parent], heap_slot[parent])
                    at = parent
            elif _worse(heap_score[0], heap_id[0], score, chunk):
                at = 0
                while True:  # down while a child is worse
                    child = 2 * at + 1
                    if child >= size:
                        break
                    if child + 1 < size and _worse(heap_score[child + 1], heap_id[child + 1],
                                                   heap_score[child], heap_id[child]):
                        child += 1
                    if not _worse(heap_score[child], heap_id[child], score, chunk):
                        break
                    heap_score[at], heap_id[at], heap_slot[at] = (
                        heap_score[child], heap_id[child], heap_slot[child])
                    at = child
            else:
                continue
            heap_score[at], heap_id[at], heap_slot[at] = score, chunk, slot
    return heap_id[:size], heap_score[:size], heap_slot[:size]
