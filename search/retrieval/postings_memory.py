"""The exact BM25 top-k from whole posting lists kept between searches.

The lists come from ``search.retrieval.postings_cache``: mapped from the files every search
process of the host shares, or, where there are none, from this process's memory. Ranking reads
every record of the query's lists in one compiled pass, a repository at a time: its lists add
up each chunk's score and the lists it was seen in (``postings_kernels.accumulate``, in a buffer
as long as one repository's span of chunk ids, or as the ids its lists hold when that span is
sparse), and its chunks are offered to a heap of the best
``limit`` per list of the pass (``postings_kernels.offer``). The top-k is exact by construction:
no bounds, no rounds, no chunk read by id to learn its score. The only statement left is the one
that applies the scope and permission filters to the chunks ranked (languages and paths are not
in the postings; tests and docs are), which also drops chunks of a generation retired since and
reads the facts the ranking signals need; where the scope filters by nothing the lists do not
carry, the chunks whose facts an earlier search read need no statement (``_Checker``).

Every score is the BM25 of ``indexing.bm25`` over the lists' field-weighted term
frequencies, the same number the SQL fallback of ``search.retrieval.fulltext`` computes from the
chunks' ``tsvector`` (the oracle tests hold them equal). The lists' arrays are read-only (a
mapped file's), so the compiled loops are built for that one type.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from dataclasses import dataclass

import numpy as np
from django.db.backends.utils import CursorWrapper

from indexing.bm25 import BM25
from indexing.postings_format import DOC_FLAG, MAX_LEN, TEST_FLAG
from search.lru import Lru
from search.retrieval.db import array_literal, search_cursor
from search.retrieval.hydrate import FACTS_COLUMNS, FACTS_WIDTH, ChunkFacts, facts_of
from search.retrieval.postings_cache import KeptLists, TermList
from search.retrieval.scope import ScopeFilter

# A repository's lists are packed when their chunk ids spread over more than this many slots
# per record they hold (and more than ``DENSE_SLOTS``, ~1.4 MB of buffers, in all).
SPARSE_SLOTS = 4
DENSE_SLOTS = 1 << 16
NO_IDS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Want:
    """One ranked list of a pass: the chunks whose test/doc flags it admits, and how many."""

    limit: int
    excluded_flags: int = 0  # chunks with any of these flags are out of this list
    wanted_flags: int = 0  # when set, only chunks with one of these flags are in it

    def admits(self, flags: np.ndarray) -> np.ndarray:
        keep = (flags & self.excluded_flags) == 0
        if self.wanted_flags:
            keep &= (flags & self.wanted_flags) != 0
        return keep


def want_of(scope: ScopeFilter, limit: int) -> Want:
    """The list ``scope``'s test/doc filters make (its other filters apply in ``_in_scope``)."""
    return Want(
        limit=limit,
        excluded_flags=(0 if scope.include_tests else TEST_FLAG)
        | (0 if scope.include_docs else DOC_FLAG),
        wanted_flags=(TEST_FLAG if "tests" in scope.only_kinds else 0)
        | (DOC_FLAG if "docs" in scope.only_kinds else 0),
    )


@dataclass
class MemoryTopK:
    ranked: list[list[tuple[int, float]]]  # per list of the pass, (chunk id, score) best first
    postings_read: int  # records ranked
    checked: int  # chunks whose scope was checked in the database
    facts: dict[int, ChunkFacts]  # of the live chunks among them, read by the same statements


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

    The best of each list are checked against its scope in the database (``_check``); while its
    filters (languages, paths) leave fewer than ``limit``, the pass runs again for that list, 8x
    deeper, without the chunks they left out."""
    ranking = _Pass(kept, terms, idfs, informative, wants, average, all_terms_boost)
    found = ranking.run(list(range(len(wants))), [w.limit for w in wants], [])
    ranked, checked = [], 0
    facts: dict[int, ChunkFacts] = {}
    with _Checker(scopes, facts, timeout_ms) as check:
        # every list's best in one statement, then deeper for a list whose filters left out
        # too many of them
        unknown = sorted({i for ids, _scores in found for i in ids})
        kept_ids = check(unknown, list(range(len(scopes))))
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
                if more:
                    accepted |= check(more, [w])[0]
        checked = check.checked
    return MemoryTopK(ranked=ranked, postings_read=ranking.read, checked=checked, facts=facts)


# The facts of chunks checked before, by id. A chunk's facts never change (a new generation keeps
# an unchanged chunk's row and id and only moves its generation), and where a scope filters by
# nothing but the test/doc flags the lists carry, the lists of the generations live at the
# search's start hold only chunks in scope: such chunks need no statement. (Liveness is checked
# again where the hits are read: a chunk of a generation retired meanwhile is not shown.)
KEPT_FACTS = 65536  # ~15 MB
_FACTS: Lru[int, ChunkFacts] = Lru(KEPT_FACTS)
_FLAG_CLAUSES = frozenset(
    {
        "TRUE",
        "NOT c.is_test",
        "NOT c.is_doc",
        "(c.is_test)",
        "(c.is_doc)",
        "(c.is_test OR c.is_doc)",
    }
)


def forget_facts() -> None:
    """Drop the facts kept (tests: a search that checks its chunks in the database)."""
    _FACTS.clear()


def _flags_only(scope: ScopeFilter) -> bool:
    """Whether ``scope`` filters by the test/doc flags only (``want_of`` applies them exactly)."""
    return not scope.params and set(scope.sql.split(" AND ")) <= _FLAG_CLAUSES


class _Checker:
    """Chunks checked against scopes: from ``_FACTS`` where the lists' flags make the scope,
    else in the database (``_in_scope``; a search cursor opened on the first statement)."""

    def __init__(self, scopes: list[ScopeFilter], facts: dict[int, ChunkFacts], timeout_ms: int):
        self.scopes, self.facts, self.timeout_ms = scopes, facts, timeout_ms
        self.stack = contextlib.ExitStack()
        self.cursor: CursorWrapper | None = None
        self.checked = 0  # chunks checked in the database

    def __enter__(self) -> _Checker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def __call__(self, ids: list[int], which: list[int]) -> list[set[int]]:
        """Per scope of ``which``, those of ``ids`` in it (and live)."""
        scopes = [self.scopes[w] for w in which]
        cached: dict[int, ChunkFacts] = {}
        if ids and all(_flags_only(scope) for scope in scopes):
            cached = _FACTS.get_many(ids)
            self.facts.update(cached)
            ids = [i for i in ids if i not in cached]
        found: list[set[int]] = [set(cached) for _ in scopes]
        if ids:
            if self.cursor is None:
                self.cursor = self.stack.enter_context(search_cursor(self.timeout_ms))
            read: dict[int, ChunkFacts] = {}
            for accepted, inside in zip(
                found, _in_scope(self.cursor, ids, scopes, read), strict=True
            ):
                accepted |= inside
            self.facts.update(read)
            _FACTS.put_many(read)
            self.checked += len(ids)
        return found


@functools.lru_cache(maxsize=64)
def _length_norm(average: float) -> np.ndarray:
    """BM25's length normalisation by token count: ``k1 * (1 - b + b * len / average)``."""
    length = np.maximum(np.arange(MAX_LEN + 1), 1).astype(np.float64)
    norm = BM25.k1 * (1 - BM25.b + BM25.b * length / average)
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
        # Per repository, the chunk id of each slot when its lists were packed (else empty: the
        # id is ``base + slot``).
        self.ids = [self._pack(r) for r in range(len(self.lists))]
        self.wants = wants
        # A repository in scope on several branches has a row of lists per branch, and a chunk
        # the branches share is in each: the heaps hold that many times more, and each chunk
        # is kept once (its copies score the same: same records, same order of terms).
        self.copies = max(Counter(r for r, _g, _b in kept.repositories).values(), default=1)
        self.informative = sum(1 << terms.index(w) for w in informative if w in terms)
        self.boost = 1.0 + all_terms_boost if self.informative else 1.0
        self.coefficients = [idf * (BM25.k1 + 1) for idf in idfs]
        self.norm = _length_norm(average)
        self.read = 0

    def _pack(self, r: int) -> np.ndarray:
        """Chunk ids outlive re-indexing (a file that did not change keeps its chunks), so a
        generation's ids may spread over a range far longer than its chunks. Past
        ``SPARSE_SLOTS`` per record, the repository's lists are renumbered 0..n-1 over the ids
        they hold, and the buffer is as long as that, not as the range."""
        row, records = self.lists[r], sum(len(v.offsets) for v in self.lists[r])
        if self.spans[r] <= max(SPARSE_SLOTS * records, DENSE_SLOTS):
            return NO_IDS
        held = np.unique(np.concatenate([v.offsets for v in row if v.span]))
        self.lists[r] = [
            v._replace(offsets=_read_only(np.searchsorted(held, v.offsets).astype(np.uint32)),
                       span=len(held))
            if v.span
            else v
            for v in row
        ]  # fmt: skip
        self.spans[r] = len(held)
        return self.bases[r] + held.astype(np.int64)

    def run(
        self, which: list[int], limits: list[int], dead: list[int]
    ) -> list[tuple[list[int], list[float]]]:
        """The best ``limits[i]`` chunks of the list ``wants[which[i]]``, none of ``dead``:
        (ids, scores), best first. A repository at a time: its terms' lists in order (each
        chunk's sum made in the order of the terms, as when read by id), then its chunks
        offered to each list's heap, in a buffer as long as one repository's span (packed:
        ``_pack``)."""
        # numba loads here, in the processes that search, not in every process that imports the
        # URL conf (a Celery worker runs Django's checks, which do).
        from search.retrieval.postings_kernels import accumulate, offer

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
        width = max(limits) * self.copies
        heap_score = np.empty((len(wants), width), dtype=np.float64)
        heap_id = np.empty((len(wants), width), dtype=np.int64)
        sizes = np.zeros(len(wants), dtype=np.int64)
        excluded = np.asarray([w.excluded_flags for w in wants], dtype=np.int64)
        wanted = np.asarray([w.wanted_flags for w in wants], dtype=np.int64)
        limit = np.asarray(limits, dtype=np.int64) * self.copies
        dead_ids = np.asarray(sorted(dead), dtype=np.int64)
        for r, row in enumerate(self.lists):
            if not self.spans[r]:
                continue
            count = 0
            for j, found in enumerate(row):
                if found.span:
                    count = accumulate(
                        scores, masks, kinds, touched, count, found.offsets, found.words,
                        self.coefficients[j], self.norm, 1 << j, admitted,
                    )  # fmt: skip
                    self.read += len(found.offsets)
            offer(
                scores, masks, kinds, touched, count, self.bases[r], self.ids[r], dead_ids,
                self.informative,
                self.boost, excluded, wanted, limit, heap_score, heap_id, sizes,
            )  # fmt: skip
        found_lists = []
        for i in range(len(wants)):
            ids, values = heap_id[i, : sizes[i]], heap_score[i, : sizes[i]]
            order = np.lexsort((ids, -values))
            ids, values = ids[order], values[order]
            if self.copies > 1:  # a shared chunk's copies are side by side: keep the first
                first = np.ones(len(ids), dtype=np.bool_)
                first[1:] = ids[1:] != ids[:-1]
                ids, values = ids[first][: limits[i]], values[first][: limits[i]]
            found_lists.append((ids.tolist(), values.tolist()))
        return found_lists


def _read_only(array: np.ndarray) -> np.ndarray:
    """The lists' arrays are read-only (mapped files'): one type for the compiled pass."""
    array.flags.writeable = False
    return array


def warm_up() -> list[tuple[list[int], list[float]]]:
    """Rank a tiny made-up pass, so that the compiled loops are built (or loaded from numba's
    cache on disk) with the very types a search passes: ~2 s the first time on a machine, which
    the server pays at start instead of its first search. The ranked lists, for tests."""
    words = np.asarray([(4 << 16) | 2, (9 << 16) | 6, (7 << 16) | (1 << 14) | 4], np.uint32)
    found = TermList.of(np.asarray([0, 3, 5], np.uint32), words, base=1)
    kept = KeptLists(repositories=[], terms=["warm"], lists=[[found]], loaded=0)
    wants = [Want(limit=2, excluded_flags=1), Want(limit=2, wanted_flags=1)]
    return _Pass(kept, ["warm"], [1.5], ["warm"], wants, 6.0, 0.5).run([0, 1], [2, 2], [4])


def _in_scope(
    cursor: CursorWrapper, ids: list[int], scopes: list[ScopeFilter], facts: dict[int, ChunkFacts]
) -> list[set[int]]:
    """Per scope, those of ``ids`` that are live chunks of its repositories' branches (the same
    for every scope of a pass), through its filters (one statement for all); the facts of the
    live ones go into ``facts``."""
    repositories = scopes[0].repository_ids
    if all(scope.repository_ids == repositories for scope in scopes[1:]):
        # the usual pass (a scope and its left-out chunks): one repository test, in WHERE
        columns = ", ".join(f"({scope.sql})" for scope in scopes)
        params = [p for scope in scopes for p in scope.params]
    else:
        columns = ", ".join(f"(r.id = ANY(%s::uuid[]) AND {scope.sql})" for scope in scopes)
        params = [
            p for scope in scopes for p in (array_literal(scope.repository_ids), *scope.params)
        ]
        repositories = list(dict.fromkeys(r for scope in scopes for r in scope.repository_ids))
    cursor.execute(
        f"SELECT c.id, {FACTS_COLUMNS}, {columns} FROM indexing_chunk c {scopes[0].live_sql}"  # noqa: S608
        " WHERE c.id = ANY(%s::bigint[]) AND r.id = ANY(%s::uuid[])",
        [*params, array_literal(ids), array_literal(repositories)],
    )
    found: list[set[int]] = [set() for _ in scopes]
    for row in cursor.fetchall():
        chunk, end = int(row[0]), 1 + FACTS_WIDTH
        facts[chunk] = facts_of(row[1:end])
        for w, inside in enumerate(row[end:]):
            if inside:
                found[w].add(chunk)
    return found
