"""Term postings ordered by impact, and the exact BM25 top-k read from their heads.

A list holds, for one lexeme of one repository generation, one record per chunk containing it
(``RECORD``: chunk id, token count, twice the field-weighted term frequency, test/doc flags),
ordered by the single-term BM25 impact ``tf / (tf + k1 * (1 - b + b * len / avglen))`` with the
repository's own average length, best first. The records come from the chunk's stored
``tsvector`` (``unnest``: each position weighs 3 for the symbol (A), 1.5 for the path (B), 1 for
the body (C, D) -- what ``ts_rank_cd`` sums), so whatever text the index stage puts into a
chunk's vector is what the postings hold.

A search reads the same depth of every list of its terms in the repositories in scope (one
statement per round: ``substring`` of the uncompressed value reads only the TOAST chunks it
needs), deepening by ``GROWTH`` until the top ``limit`` is certain ("no random access"
threshold algorithm): a chunk seen in some lists has a lower bound (its known contributions)
and an upper bound (plus, for each list it was not seen in, the impact where that list was cut
off); a chunk seen nowhere is bounded by the sum of the cut-offs. The search stops once the
``limit`` best lower bounds beat every other upper bound. The chunks that can still matter are
then read once, by id, in one statement that applies the scope and permission filters (the
live generation of ready repositories in scope, tests, docs, languages, paths) and gives their
exact term frequencies from the ``tsvector`` -- tens of rows, not every candidate.

With the scope's average length ``A`` instead of a repository's ``A_r`` a contribution is at
most ``max(1, A / A_r)`` times its stored-order impact, so the cut-offs are scaled by that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from uuid import UUID

import numpy as np
from django.db.backends.utils import CursorWrapper

from search.retrieval.db import search_cursor
from search.retrieval.scope import LIVE_CHUNKS_SQL, ScopeFilter

K1 = 1.2
B = 0.75
RECORD = np.dtype([("id", ">i8"), ("len", ">i4"), ("tf2", ">i2"), ("flags", "u1")])
TEST_FLAG, DOC_FLAG = 1, 2
GROWTH = 4
MAX_CHECKED = 400  # chunks read by id per check; past that, the lists are read deeper first
# twice the field-weighted term frequency of an ``unnest(tsvector)`` row ``u``
TF2_SQL = (
    "(6 * cardinality(array_positions(u.weights, 'A'))"
    " + 3 * cardinality(array_positions(u.weights, 'B'))"
    " + 2 * (cardinality(u.weights) - cardinality(array_positions(u.weights, 'A'))"
    " - cardinality(array_positions(u.weights, 'B'))))"
)
_BUILD = f"""
INSERT INTO search_termpostings (repository_id, generation, term, df, postings)
SELECT %(repository)s, %(generation)s, p.lexeme, count(*),
       string_agg(int8send(p.id) || int4send(p.len) || int2send(p.tf2::int2)
                  || set_byte('\\x00'::bytea, 0, p.flags), ''::bytea
                  ORDER BY p.tf2 / (p.tf2 + 2 * {K1} * (1 - {B} + {B} * greatest(p.len, 1)
                                                         / %(average)s::float8)) DESC, p.id)
FROM (
    SELECT c.id, c.token_count AS len, c.is_test::int + 2 * c.is_doc::int AS flags, u.lexeme,
           {TF2_SQL} AS tf2
    FROM indexing_chunk c CROSS JOIN LATERAL unnest(c.search_vector) u
    WHERE c.repository_id = %(repository)s AND c.generation = %(generation)s
      AND length(u.lexeme) <= 128
) p
GROUP BY p.lexeme
"""  # noqa: S608 -- only constants are interpolated; values are placeholders


def build_postings(
    cursor: CursorWrapper, repository_id: UUID, generation: int, average: float
) -> None:
    """Write the posting lists of one generation (its old rows already deleted)."""
    cursor.execute(
        _BUILD,
        {"repository": repository_id, "generation": generation, "average": average or 1.0},
    )


def saturation(tf2: np.ndarray, length: np.ndarray, average: float) -> np.ndarray:
    """``tf / (tf + k1 * (1 - b + b * len / avg))`` -- BM25 without ``idf * (k1 + 1)``."""
    tf = tf2.astype(np.float64) / 2.0
    norm = K1 * (1 - B + B * np.maximum(length, 1).astype(np.float64) / average)
    return tf / (tf + norm)


@dataclass
class TopK:
    ranked: list[tuple[int, float]]
    exact: bool
    rounds: int = 0
    postings_read: int = 0
    checked: int = 0
    depth: int = 0


@dataclass
class _Lists:
    """Every record read so far, and where each list was cut off."""

    repositories: list[UUID]
    terms: list[str]
    records: list[np.ndarray] = field(default_factory=list)
    term_of: list[np.ndarray] = field(default_factory=list)
    repo_of: list[np.ndarray] = field(default_factory=list)
    df: dict[tuple[int, int], int] = field(default_factory=dict)
    last: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    read: dict[tuple[int, int], int] = field(default_factory=dict)


def exact_top_k(
    terms: list[str],
    idfs: list[float],
    informative: list[str],
    scope: ScopeFilter,
    averages: dict[UUID, float],
    average: float,
    *,
    limit: int,
    all_terms_boost: float,
    timeout_ms: int,
) -> TopK:
    """The ``limit`` best chunks by BM25 (score desc, id asc) over the repositories in scope."""
    repositories = [r for r in scope.repository_ids if r in averages]
    lists = _Lists(repositories, terms)
    rindex = {r: i for i, r in enumerate(repositories)}
    tindex = {t: j for j, t in enumerate(terms)}
    idf = np.asarray(idfs, dtype=np.float64)
    informative_mask = sum(1 << tindex[w] for w in informative if w in tindex)
    boost = 1.0 + all_terms_boost if informative_mask else 1.0
    # The scope's average against each repository's: how far a cut-off may under-state.
    slack = np.asarray(
        [max(1.0, average / averages[r]) * (1 + 1e-9) for r in repositories], dtype=np.float64
    )
    excluded_flags = (0 if scope.include_tests else TEST_FLAG) | (
        0 if scope.include_docs else DOC_FLAG
    )
    exact: dict[int, float] = {}  # chunk id -> exact score (read by id, in scope)
    rejected: set[int] = set()  # read by id and out of scope
    result = TopK(ranked=[], exact=False)
    depth = max(16, math.ceil(4 * limit / max(len(repositories), 1)))
    start = 0
    with search_cursor(timeout_ms) as cursor:
        while True:
            result.rounds += 1
            _fetch(cursor, lists, rindex, tindex, start, depth)
            result.depth = depth
            state = _bounds(lists, idf, average, averages, slack, boost, informative_mask)
            exhausted = all(
                lists.df[key] <= depth for key in lists.df
            )  # every list read to its end
            while True:
                done, to_check = _decide(state, exact, rejected, excluded_flags, limit)
                if done is not None:
                    result.ranked, result.exact = done, True
                    result.postings_read = int(sum(len(r) for r in lists.records))
                    return result
                if not to_check or (len(to_check) > MAX_CHECKED and not exhausted):
                    break
                result.checked += len(to_check)
                _check(cursor, to_check[: max(MAX_CHECKED, limit)], terms, idf, informative,
                       boost, scope, average, exact, rejected)  # fmt: skip
            if exhausted:
                # Nothing left to read and too many ties to check: rank by the bounds.
                result.ranked = _best_effort(state, exact, rejected, excluded_flags, limit)
                result.postings_read = int(sum(len(r) for r in lists.records))
                return result
            start, depth = depth, depth * GROWTH


def _fetch(
    cursor: CursorWrapper,
    lists: _Lists,
    rindex: dict[UUID, int],
    tindex: dict[str, int],
    start: int,
    depth: int,
) -> None:
    """Records ``start .. depth`` of every list of the terms in scope still longer than ``start``."""
    size = RECORD.itemsize
    cursor.execute(
        "SELECT p.repository_id, p.term, p.df, substring(p.postings FROM %s FOR %s)"
        " FROM search_termpostings p JOIN indexing_repository r"
        "   ON r.id = p.repository_id AND p.generation = r.active_generation"
        " WHERE p.repository_id = ANY(%s) AND p.term = ANY(%s) AND p.df > %s",
        [start * size + 1, (depth - start) * size, lists.repositories, lists.terms, start],
    )
    for repository_id, term, df, chunk in cursor.fetchall():
        key = (rindex[repository_id], tindex[term])
        records = np.frombuffer(bytes(chunk), dtype=RECORD)
        lists.df[key] = int(df)
        if len(records):
            lists.records.append(records)
            lists.term_of.append(np.full(len(records), key[1], dtype=np.int64))
            lists.repo_of.append(np.full(len(records), key[0], dtype=np.int64))
            lists.last[key] = records[-1:]
            lists.read[key] = lists.read.get(key, 0) + len(records)


@dataclass
class _State:
    ids: np.ndarray  # candidate chunk ids, ascending
    lower: np.ndarray
    upper: np.ndarray
    flags: np.ndarray
    unseen: float  # the best score a chunk seen in no list can still have


def _bounds(
    lists: _Lists,
    idf: np.ndarray,
    average: float,
    averages: dict[UUID, float],
    slack: np.ndarray,
    boost: float,
    informative_mask: int,
) -> _State:
    terms = len(lists.terms)
    cut = np.zeros((len(lists.repositories), terms), dtype=np.float64)
    for (ri, tj), df in lists.df.items():
        read = lists.last.get((ri, tj))
        if read is not None and df > lists.read.get((ri, tj), 0):
            impact = saturation(
                read["tf2"], read["len"], averages[lists.repositories[ri]]
            )  # the stored order's impact where the list was cut
            cut[ri, tj] = idf[tj] * (K1 + 1) * float(impact[0]) * slack[ri]
    if not lists.records:
        empty = np.zeros(0, dtype=np.int64)
        return _State(empty, empty.astype(np.float64), empty.astype(np.float64), empty, 0.0)
    records = np.concatenate(lists.records)
    term_of = np.concatenate(lists.term_of)
    repo_of = np.concatenate(lists.repo_of)
    contribution = idf[term_of] * (K1 + 1) * saturation(records["tf2"], records["len"], average)
    ids, inverse = np.unique(records["id"], return_inverse=True)
    known = np.bincount(inverse, weights=contribution, minlength=len(ids))
    mask = np.bincount(inverse, weights=(1 << term_of).astype(np.float64), minlength=len(ids))
    mask = mask.astype(np.int64)
    repo = np.zeros(len(ids), dtype=np.int64)
    repo[inverse] = repo_of
    flags = np.zeros(len(ids), dtype=np.int64)
    flags[inverse] = records["flags"]
    bits = (mask[:, None] >> np.arange(terms)) & 1
    missing = ((1 - bits) * cut[repo]).sum(axis=1)
    has_all = (mask & informative_mask) == informative_mask
    # An informative word not seen is known absent when its list is read to the end (cut 0).
    wanted = ((informative_mask >> np.arange(terms)) & 1).astype(bool)
    absent = (bits == 0) & (cut[repo] == 0) & wanted
    maybe_all = ~absent.any(axis=1)
    lower = known * np.where(has_all, boost, 1.0)
    upper = (known + missing) * np.where(maybe_all, boost, 1.0)
    unseen = float(cut.sum(axis=1).max()) * boost if cut.size else 0.0
    return _State(ids=ids, lower=lower, upper=upper, flags=flags, unseen=unseen)


def _decide(
    state: _State,
    exact: dict[int, float],
    rejected: set[int],
    excluded_flags: int,
    limit: int,
) -> tuple[list[tuple[int, float]] | None, list[int]]:
    """The final ranking when the bounds settle it, else the chunks worth reading by id."""
    ids = state.ids
    keep = (state.flags & excluded_flags) == 0
    if rejected:
        keep &= ~np.isin(ids, np.fromiter(rejected, dtype=np.int64))
    ids, lower, upper = ids[keep], state.lower[keep].copy(), state.upper[keep].copy()
    if exact:
        known = np.isin(ids, np.fromiter(exact, dtype=np.int64))
        values = np.asarray([exact.get(int(i), 0.0) for i in ids[known]])
        lower[known] = values
        upper[known] = values
    order = np.lexsort((ids, -lower))
    top = order[:limit]
    theta = float(lower[top[-1]]) if len(top) == limit else 0.0
    rest = order[limit:]
    # Rivals: outside the top, bounds not settled, and could still rank above its last member.
    open_ = rest[lower[rest] < upper[rest]]
    if len(top) == limit:
        last_id = ids[top[-1]]
        open_ = open_[(upper[open_] > theta) | ((upper[open_] == theta) & (ids[open_] < last_id))]
    rival = open_
    unchecked_top = [int(i) for i in ids[top] if int(i) not in exact]
    settled = state.unseen < theta or (state.unseen == 0 and len(top) < limit)
    if settled and not unchecked_top and not len(rival):
        return [(int(ids[i]), float(lower[i])) for i in top], []
    wanted = unchecked_top + [int(i) for i in ids[rival] if int(i) not in exact]
    if not settled and not unchecked_top:
        return None, []  # only reading deeper can settle it
    return None, wanted


def _check(
    cursor: CursorWrapper,
    ids: list[int],
    terms: list[str],
    idf: np.ndarray,
    informative: list[str],
    boost: float,
    scope: ScopeFilter,
    average: float,
    exact: dict[int, float],
    rejected: set[int],
) -> None:
    """Exact scores of ``ids`` that are in scope (filters applied here); the rest rejected."""
    cursor.execute(
        f"SELECT c.id, c.token_count, t.lexemes, t.tf2"  # noqa: S608
        f" FROM indexing_chunk c {LIVE_CHUNKS_SQL}"
        f" CROSS JOIN LATERAL (SELECT array_agg(u.lexeme) AS lexemes,"
        f"   array_agg({TF2_SQL}) AS tf2 FROM unnest(c.search_vector) u"
        f"   WHERE u.lexeme = ANY(%s)) t"
        f" WHERE c.id = ANY(%s) AND r.id = ANY(%s) AND {scope.sql}",
        [terms, ids, scope.repository_ids, *scope.params],
    )
    tindex = {t: j for j, t in enumerate(terms)}
    wanted = set(informative)
    found = set()
    for chunk_id, length, lexemes, tf2s in cursor.fetchall():
        found.add(int(chunk_id))
        lexemes = lexemes or []
        score = 0.0
        if lexemes:
            tf2 = np.asarray(tf2s, dtype=np.int64)
            j = np.asarray([tindex[x] for x in lexemes])
            sat = saturation(tf2, np.full(len(tf2), int(length)), average)
            score = float((idf[j] * (K1 + 1) * sat).sum())
        if wanted and wanted <= set(lexemes):
            score *= boost
        exact[int(chunk_id)] = score
    rejected.update(i for i in ids if i not in found)


def _best_effort(
    state: _State, exact: dict[int, float], rejected: set[int], excluded_flags: int, limit: int
) -> list[tuple[int, float]]:
    ranked = []
    for i, chunk_id in enumerate(state.ids):
        cid = int(chunk_id)
        if cid in rejected or state.flags[i] & excluded_flags:
            continue
        ranked.append((cid, exact.get(cid, float(state.lower[i]))))
    ranked.sort(key=lambda item: (-item[1], item[0]))
    return ranked[:limit]
