"""The exact BM25 top-k from whole posting lists kept in memory between searches.

The term postings (``search.retrieval.postings_format``) of a repository generation do not change
once built, so a process keeps the lists its searches read (``ListCache``: least recently used
first out, ``REPO_SEARCH_POSTINGS_MEMORY_MB`` in all) under a key that names what they were built
from -- repository, generation, and the transaction that built its statistics (``xmin`` of its
facet rows, new with every rebuild) -- and a search whose lists are all there reads none of them
from the database.

Ranking then reads every record of the query's lists in one compiled pass, a repository at a
time: its lists add up each chunk's score and the lists it was seen in (``_accumulate``, in a
buffer as long as one repository's span of chunk ids), and its chunks are offered to a heap of
the best ``limit`` per list of the pass (``_offer``). The top-k is exact by construction: no
bounds, no rounds, no chunk read by id to learn its score. The only statement left is the one
that applies the scope and permission filters to the chunks ranked (languages and paths are not
in the postings; tests and docs are), which also drops chunks of a generation retired since.

Scores are computed as ``postings_check.check_chunks`` computes them (the same operations in the
same order), so a chunk scores the same here as read by id. A search this cannot serve (lists
larger than half the cache, ids of one generation spanning 2^32 or more, the cache turned off)
returns None and is ranked by the rounds of ``search.retrieval.postings``.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np
from django.conf import settings
from django.db import DatabaseError
from django.db.backends.utils import CursorWrapper
from numba import njit

from search.retrieval.db import array_literal, binary_cursor, search_cursor
from search.retrieval.postings_bounds import Want
from search.retrieval.postings_format import HEADER, K1, MAX_LEN, RECORD, B, buckets, list_base
from search.retrieval.scope import LIVE_CHUNKS_SQL, ScopeFilter

logger = logging.getLogger(__name__)
TOO_LARGE_REMEMBERED = 10_000  # searches remembered as too large to keep (then forgotten)
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


class ListCache:
    """Whole term lists by ``Key``, the least recently used dropped past ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._lists: OrderedDict[Key, TermList] = OrderedDict()
        self._lock = threading.Lock()
        # Searches found too large to keep (their repositories' builds and terms), so that
        # the next one goes to the database at once instead of reading the lists whole again.
        self.too_large: set[tuple[int, frozenset[str]]] = set()

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
            self.too_large.clear()
            self.used = 0

    def mark_too_large(self, key: tuple[int, frozenset[str]]) -> None:
        with self._lock:
            if len(self.too_large) >= TOO_LARGE_REMEMBERED:
                self.too_large.clear()
            self.too_large.add(key)

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
    """Lists this path cannot rank (the rounds can)."""


def kept_lists(
    repositories: list[tuple[UUID, int, int]], terms: list[str], timeout_ms: int = 5000
) -> KeptLists | None:
    """The whole lists of ``terms`` in ``repositories`` ((id, generation, statistics' build)),
    those not in memory read in one statement and kept; None when the cache is off or cannot
    hold them (more than half of it), or ids of a generation span 2^32 or more."""
    store = cache()
    if not store.budget:
        return None
    signature = (hash(tuple(repositories)), frozenset(terms))
    if signature in store.too_large:
        return None
    keys = [(r.int, g, b, term) for r, g, b in repositories for term in terms]
    found = store.get(keys)
    missing = [key for key in keys if key not in found]
    loaded: dict[Key, TermList] = {}
    if missing:
        try:
            with search_cursor(timeout_ms) as cursor:
                loaded = _load(cursor, missing)
        except Unsupported:
            store.mark_too_large(signature)
            return None
        except DatabaseError:  # e.g. the statement timed out: the rounds read only the heads
            logger.warning("posting lists not read whole", exc_info=True)
            return None
        found.update(loaded)
    if sum(v.nbytes for v in found.values()) > store.budget // 2:
        store.mark_too_large(signature)  # it would push out everything else, and not stay
        return None
    store.put(loaded)
    lists = [[found[(r.int, g, b, term)] for term in terms] for r, g, b in repositories]
    return KeptLists(list(repositories), list(terms), lists, len(missing))


@dataclass
class MemoryTopK:
    ranked: list[list[tuple[int, float]]]  # per list of the pass, (chunk id, score) best first
    postings_read: int  # records ranked
    checked: int  # chunks whose scope was checked in the database


def memory_top_k(
    kept: KeptLists,
    terms: list[str],
    idfs: list[float],
    informative: list[str],
    scopes: list[ScopeFilter],
    wants: list[Want],
    *,
    average: float,
    all_terms_boost: float,
    timeout_ms: int,
) -> MemoryTopK:
    """For each of ``wants`` (and its scope in ``scopes``), its ``limit`` best chunks by BM25
    (score desc, id asc) over the kept lists of ``terms`` (some of ``kept.terms``).

    The best of each list are checked against its scope in the database; while its filters
    (languages, paths) leave fewer than ``limit``, the pass runs again for that list, 8x deeper,
    without the chunks they left out."""
    ranking = _Pass(kept, terms, idfs, informative, wants, average, all_terms_boost)
    found = ranking.run(list(range(len(wants))), [w.limit for w in wants], [])
    ranked, checked = [], 0
    with search_cursor(timeout_ms) as cursor:
        # every list's best in one statement, then deeper for a list whose filters left out
        # too many of them
        unknown = sorted({i for ids, _scores in found for i in ids})
        kept_ids = _in_scope(cursor, unknown, scopes) if unknown else [set() for _ in scopes]
        checked += len(unknown)
        for w, want in enumerate(wants):
            accepted = kept_ids[w]
            rejected: list[int] = []
            depth = want.limit
            ids, scores = found[w]
            while True:
                rejected += [i for i in ids if i not in accepted]
                best = [(i, s) for i, s in zip(ids, scores, strict=True) if i in accepted]
                if len(best) >= want.limit or len(ids) < depth:
                    ranked.append(best[: want.limit])
                    break
                depth *= 8
                ids, scores = ranking.run([w], [depth], rejected)[0]
                more = [i for i in ids if i not in accepted]
                checked += len(more)
                if more:
                    accepted |= _in_scope(cursor, more, [scopes[w]])[0]
    return MemoryTopK(ranked=ranked, postings_read=ranking.read, checked=checked)


@functools.lru_cache(maxsize=64)
def _length_norm(average: float) -> np.ndarray:
    """BM25's length normalisation by token count, as ``postings_format.saturation`` has it."""
    length = np.maximum(np.arange(MAX_LEN + 1), 1).astype(np.float64)
    norm = K1 * (1 - B + B * length / average)
    norm.flags.writeable = False
    return norm


class _Pass:
    """The query's lists, and what ranking them needs, to rank them once or again."""

    def __init__(
        self,
        kept: KeptLists,
        terms: list[str],
        idfs: list[float],
        informative: list[str],
        wants: list[Want],
        average: float,
        all_terms_boost: float,
    ) -> None:
        columns = [kept.terms.index(term) for term in terms]
        self.lists = [[row[j] for j in columns] for row in kept.lists]
        self.spans = [max((v.span for v in row), default=0) for row in self.lists]
        self.bases = [next((v.base for v in row if v.span), 0) for row in self.lists]
        self.wants = wants
        self.informative = sum(1 << terms.index(w) for w in informative if w in terms)
        self.boost = 1.0 + all_terms_boost if self.informative else 1.0
        self.coefficients = [idf * (K1 + 1) for idf in idfs]
        self.norm = _length_norm(average)
        self.read = 0

    def run(
        self, which: list[int], limits: list[int], dead: list[int]
    ) -> list[tuple[list[int], list[float]]]:
        """The best ``limits[i]`` chunks of the list ``wants[which[i]]``, none of ``dead``:
        (ids, scores), best first. A repository at a time: its terms' lists in order (each
        chunk's sum made in the order of the terms, as when read by id), then its chunks
        offered to each list's heap, in a buffer as long as one repository's span."""
        wants = [self.wants[w] for w in which]
        admitted = np.zeros(4, dtype=np.bool_)
        for kind in range(4):
            flags = np.asarray([kind], dtype=np.int64)
            admitted[kind] = any(bool(w.admits(flags)[0]) for w in wants)
        size = max(self.spans, default=0)
        scores = np.zeros(size, dtype=np.float64)
        masks = np.zeros(size, dtype=np.int32)
        kinds = np.zeros(size, dtype=np.int8)
        touched = np.zeros(size + 1, dtype=np.int64)  # the slots some list read, in any order
        width = max(limits)
        heap_score = np.empty((len(wants), width), dtype=np.float64)
        heap_id = np.empty((len(wants), width), dtype=np.int64)
        sizes = np.zeros(len(wants), dtype=np.int64)
        excluded = np.asarray([w.excluded_flags for w in wants], dtype=np.int64)
        wanted = np.asarray([w.wanted_flags for w in wants], dtype=np.int64)
        limit = np.asarray(limits, dtype=np.int64)
        dead_ids = np.asarray(sorted(dead), dtype=np.int64)
        for r, row in enumerate(self.lists):
            if not self.spans[r]:
                continue
            count = 0
            for j, found in enumerate(row):
                if found.span:
                    count = _accumulate(
                        scores, masks, kinds, touched, count, found.offsets, found.words,
                        self.coefficients[j], self.norm, 1 << j, admitted,
                    )  # fmt: skip
                    self.read += len(found.offsets)
            _offer(
                scores, masks, kinds, touched, count, self.bases[r], dead_ids, self.informative,
                self.boost, excluded, wanted, limit, heap_score, heap_id, sizes,
            )  # fmt: skip
        found_lists = []
        for i in range(len(wants)):
            ids, values = heap_id[i, : sizes[i]], heap_score[i, : sizes[i]]
            order = np.lexsort((ids, -values))
            found_lists.append((ids[order].tolist(), values[order].tolist()))
        return found_lists


def _in_scope(cursor: CursorWrapper, ids: list[int], scopes: list[ScopeFilter]) -> list[set[int]]:
    """Per scope, those of ``ids`` that are live chunks of its repositories, through its
    filters (one statement for all)."""
    columns = ", ".join(f"(r.id = ANY(%s::uuid[]) AND {scope.sql})" for scope in scopes)
    cursor.execute(
        f"SELECT c.id, {columns} FROM indexing_chunk c {LIVE_CHUNKS_SQL}"  # noqa: S608
        " WHERE c.id = ANY(%s::bigint[]) AND r.id = ANY(%s::uuid[])",
        [*(p for scope in scopes for p in (array_literal(scope.repository_ids), *scope.params)),
         array_literal(ids), array_literal({r for scope in scopes for r in scope.repository_ids})],
    )  # fmt: skip
    found: list[set[int]] = [set() for _ in scopes]
    for row in cursor.fetchall():
        for w, inside in enumerate(row[1:]):
            if inside:
                found[w].add(int(row[0]))
    return found


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


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _accumulate(
    scores: np.ndarray, masks: np.ndarray, kinds: np.ndarray, touched: np.ndarray, count: int,
    offsets: np.ndarray, words: np.ndarray, coefficient: float, norm: np.ndarray, bit: int,
    admitted: np.ndarray,
) -> int:  # fmt: skip
    """Add one list's contributions (``postings_format.saturation`` times ``coefficient``, in
    the same operations; ``norm`` by token count) to its chunks' scores, and the slots seen for
    the first time to ``touched`` (``count`` of them so far); the new count."""
    for i in range(offsets.shape[0]):
        word = np.int64(words[i])
        kind = (word >> 14) & 3
        if not admitted[kind]:
            continue
        slot = np.int64(offsets[i])
        tf = np.float64(word & 0x3FFF) / 2.0
        scores[slot] += coefficient * (tf / (tf + norm[word >> 16]))
        mask = masks[slot]
        touched[count] = slot
        count += mask == 0  # (no branch: kept only when new)
        masks[slot] = mask | bit
        kinds[slot] = kind
    return count


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _worse(score: float, chunk: int, other_score: float, other_chunk: int) -> bool:
    return score < other_score or (score == other_score and chunk > other_chunk)


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _offer(
    scores: np.ndarray, masks: np.ndarray, kinds: np.ndarray, touched: np.ndarray, count: int,
    base: int, dead: np.ndarray, informative: int, boost: float, excluded: np.ndarray,
    wanted: np.ndarray, limits: np.ndarray, heap_score: np.ndarray, heap_id: np.ndarray,
    sizes: np.ndarray,
) -> None:  # fmt: skip
    """Offer one repository's chunks that some list read (``touched[:count]``: slots, chunk id
    ``base + slot``) to each list's heap (its root the worst kept: score asc, then id desc),
    and clear their slots in the buffer."""
    worst = np.zeros(4, dtype=np.float64)
    _worst_kept(heap_score, sizes, limits, excluded, wanted, worst)
    for i in range(count):
        slot = touched[i]
        score, mask, kind = scores[slot], masks[slot], kinds[slot]
        scores[slot] = 0.0
        masks[slot] = 0
        # (mostly no heap would keep it: below the worst kept of every list admitting its kind)
        if score * boost < worst[kind]:
            continue
        if informative and (mask & informative) == informative:
            score = score * boost
        chunk = base + slot
        if dead.shape[0]:
            at = np.searchsorted(dead, chunk)
            if at < dead.shape[0] and dead[at] == chunk:
                continue
        for w in range(limits.shape[0]):
            if kind & excluded[w] or (wanted[w] and not kind & wanted[w]):
                continue
            if sizes[w] == limits[w] and not (
                score > heap_score[w, 0] or (score == heap_score[w, 0] and chunk < heap_id[w, 0])
            ):
                continue
            _push(heap_score[w], heap_id[w], sizes, w, limits[w], score, chunk)
            _worst_kept(heap_score, sizes, limits, excluded, wanted, worst)


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _worst_kept(
    heap_score: np.ndarray, sizes: np.ndarray, limits: np.ndarray, excluded: np.ndarray,
    wanted: np.ndarray, worst: np.ndarray,
) -> None:  # fmt: skip
    """Per kind of chunk, the lowest score a list admitting it could still take (0 while one of
    them is not full; infinite when none admits it)."""
    for kind in range(4):
        low = np.inf
        for w in range(limits.shape[0]):
            if kind & excluded[w] or (wanted[w] and not kind & wanted[w]) or limits[w] == 0:
                continue
            low = min(low, heap_score[w, 0] if sizes[w] == limits[w] else 0.0)
        worst[kind] = low


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _push(
    heap_score: np.ndarray, heap_id: np.ndarray, sizes: np.ndarray, w: int, limit: int,
    score: float, chunk: int,
) -> None:  # fmt: skip
    size = sizes[w]
    if size < limit:
        at = size
        sizes[w] = size + 1
        while at > 0:  # up while worse than the parent
            parent = (at - 1) // 2
            if not _worse(score, chunk, heap_score[parent], heap_id[parent]):
                break
            heap_score[at], heap_id[at] = heap_score[parent], heap_id[parent]
            at = parent
    elif _worse(heap_score[0], heap_id[0], score, chunk):
        at = 0
        while True:  # down while a child is worse
            child = 2 * at + 1
            if child >= size:
                break
            if child + 1 < size and _worse(
                heap_score[child + 1], heap_id[child + 1], heap_score[child], heap_id[child]
            ):
                child += 1
            if not _worse(heap_score[child], heap_id[child], score, chunk):
                break
            heap_score[at], heap_id[at] = heap_score[child], heap_id[child]
            at = child
    else:
        return
    heap_score[at], heap_id[at] = score, chunk
