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
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any
from uuid import UUID

import numpy as np
from django.db.backends.utils import CursorWrapper

from search.retrieval.bm25 import BM25
from search.retrieval.db import array_literal, binary_cursor, search_cursor
from search.retrieval.postings_bounds import (
    CHECK_BATCH,
    Lists,
    State,
    Want,
    best_effort,
    bounds,
    decide,
    most_promising,
)
from search.retrieval.postings_check import SEED_ROWS, ExactScores, check_chunks
from search.retrieval.postings_format import (
    DOC_FLAG,
    HEADER,
    RECORD,
    TEST_FLAG,
    buckets,
    decode,
    list_base,
    saturation,
)
from search.retrieval.scope import ScopeFilter

GROWTH = 8  # each round reads this many times deeper (measured: 8 beats 4 at 1 M chunks)
FIRST_DEPTH = 16  # records of each list read in the first round
# Reading one chunk by id costs about as much, per term, as decoding this many records (measured
# at 1 M chunks: ~3.3 us per ts_rank_cd call, and 3 beat 1 and 10 in p50 over the benchmark's
# prose and common-word queries): with more rivals than that, the lists are read deeper instead.
CHECK_COST = 3


@dataclass
class TopK:
    """Per list of the pass (``wants``): its ranking and whether the bounds proved it exact."""

    ranked: list[list[tuple[int, float]]]
    exact: list[bool]
    rounds: int = 0
    postings_read: int = 0
    checked: int = 0
    depth: int = 0


def merge_top_k(parts: list[TopK], wants: list[Want]) -> TopK:
    """The top-k of the union of disjoint scopes from each one's own exact top-k (every
    score uses the same statistics, so a chunk scores the same in its part as in the union):
    per list of the pass, the parts' rankings merged by score desc, id asc, cut to its limit."""
    ranked = [
        sorted((pair for part in parts for pair in part.ranked[i]), key=lambda p: (-p[1], p[0]))[
            : want.limit
        ]
        for i, want in enumerate(wants)
    ]
    return TopK(
        ranked=ranked,
        exact=[all(part.exact[i] for part in parts) for i in range(len(wants))],
        rounds=max(part.rounds for part in parts),
        postings_read=sum(part.postings_read for part in parts),
        checked=sum(part.checked for part in parts),
        depth=max(part.depth for part in parts),
    )


def want_of(scope: ScopeFilter, limit: int) -> Want:
    """The list ``scope``'s test/doc filters make (its other filters apply when read by id)."""
    return Want(
        limit=limit,
        excluded_flags=(0 if scope.include_tests else TEST_FLAG)
        | (0 if scope.include_docs else DOC_FLAG),
        wanted_flags=(TEST_FLAG if "tests" in scope.only_kinds else 0)
        | (DOC_FLAG if "docs" in scope.only_kinds else 0),
    )


def exact_top_k(
    terms: list[str],
    idfs: list[float],
    informative: list[str],
    scope: ScopeFilter,
    averages: dict[UUID, float],
    average: float,
    *,
    wants: list[Want],
    all_terms_boost: float,
    timeout_ms: int,
    seed: str | None = None,
    first_depth: int = 0,
) -> TopK:
    """For each of ``wants``, its ``limit`` best chunks by BM25 (score desc, id asc) over the
    repositories in scope, from one reading of the lists (``scope``: every chunk some list may
    hold; ``first_depth``: records of each list read in the first round, e.g. all of them)."""
    repositories = [r for r in scope.repository_ids if r in averages]
    lists = Lists(repositories, terms)
    tindex = {t: j for j, t in enumerate(terms)}
    idf = np.asarray(idfs, dtype=np.float64)
    informative_mask = sum(1 << tindex[w] for w in informative if w in tindex)
    boost = 1.0 + all_terms_boost if informative_mask else 1.0
    # The scope's average against each repository's: how far a cut-off may under-state.
    slack = {r: max(1.0, average / averages[r]) * (1 + 1e-9) for r in repositories}
    lists.wants = list(wants)
    exact = ExactScores()
    result = TopK(ranked=[[] for _ in wants], exact=[False] * len(wants))
    limit = max(w.limit for w in wants)
    depth = first_depth or max(FIRST_DEPTH, math.ceil(4 * limit / max(len(repositories), 1)))
    plan: dict[tuple[int, int], int] | None = None  # list -> records to read next; None: all

    def check(ids: list[int], seed: str | None = None) -> None:
        result.checked += len(ids) if seed is None else SEED_ROWS
        check_chunks(cursor, ids, terms, idf, informative, boost, scope, average, exact, seed)
        _kill_rejected(lists, ids, exact)

    with search_cursor(timeout_ms, enable_seqscan="off") as cursor:
        while True:
            result.rounds += 1
            _fetch(cursor, lists, averages, plan, depth, idf, average)
            cut = _cut_matrix(lists, idf, slack)
            state = bounds(lists, cut, boost, informative_mask)
            if result.rounds == 1:
                # Read the most promising chunks by id first: their exact scores give a cut-off
                # close to the final one at once (lower bounds alone come late).
                probe = sorted({i for w in lists.wants for i in most_promising(state, exact, w)})
                if probe:
                    check(probe)
            elif result.rounds == 2 and seed is not None:  # the first round did not settle it
                check([], seed)
            state = bounds(lists, cut, boost, informative_mask)  # less the rejected
            while True:
                open_lists = len(lists.wants)
                to_check, count, theta = _decide(lists, state, exact, wants, result)
                if not lists.wants:
                    result.postings_read = lists.postings_read
                    return result
                if len(lists.wants) < open_lists:  # the settled lists' parts are read no more
                    cut = _cut_matrix(lists, idf, slack)
                if not to_check:
                    break
                if cut.any():
                    plan = _deepen(lists, cut, theta)
                    if count * len(terms) * CHECK_COST > sum(plan.values()):
                        break
                check(to_check[:CHECK_BATCH])
                state = bounds(lists, cut, boost, informative_mask)
            if not cut.any():
                # Nothing left to read and too many ties to check: rank by the bounds.
                for want in lists.wants:
                    result.ranked[wants.index(want)] = best_effort(state, exact, want)
                result.postings_read = lists.postings_read
                return result
            plan = _deepen(lists, cut, theta)


def _decide(
    lists: Lists, state: State, exact: ExactScores, wants: list[Want], result: TopK
) -> tuple[list[int], int, float]:
    """Decide every list still open: a settled one takes its ranking and leaves the pass (its
    chunks leave the bounds). The others' chunks worth reading by id (theirs interleaved, the
    most promising first), how many there are, and the lowest score of a current top."""
    per_list, count, theta = [], 0, math.inf
    for want in list(lists.wants):
        done, to_check, rivals, want_theta = decide(state, exact, want)
        if done is not None:
            result.ranked[wants.index(want)] = done
            result.exact[wants.index(want)] = True
            lists.wants.remove(want)
            continue
        per_list.append(to_check)
        count += rivals
        theta = min(theta, want_theta)
    _kill_below(lists, state, exact)
    merged = [i for group in zip_longest(*per_list) for i in group if i is not None]
    return list(dict.fromkeys(merged)), count, 0.0 if theta == math.inf else theta


def _kill_below(lists: Lists, state: State, exact: ExactScores) -> None:
    """Chunks no open list admits, or whose upper bound is below the ``limit``-th best score
    read by id in every open list that admits them (chunks in scope, so a real cut-off), cannot
    make a top: bounds only shrink and those scores only grow."""
    dead = np.ones(len(state.ids), dtype=bool)
    for want in lists.wants:
        admitted = want.admits(state.flags)
        _ids, scores = want.admitted(exact)
        if len(scores) >= want.limit:
            kth = float(np.partition(scores, len(scores) - want.limit)[len(scores) - want.limit])
            dead &= ~admitted | (state.upper < kth)
        else:
            dead &= ~admitted
    lists.alive[state.index[dead]] = False


def _kill_rejected(lists: Lists, ids: list[int], exact: ExactScores) -> None:
    rejected = [i for i in ids if i in exact.rejected]
    if rejected:
        lists.kill(np.asarray(sorted(rejected), dtype=np.int64))


def _deepen(lists: Lists, cut: np.ndarray, theta: float) -> dict[tuple[int, int], int]:
    """Read further only where a cut-off is high (score-at-a-time: lists are read down to about
    the same contribution, so the rare terms' lists are read to the end and the commonest
    words' hardly at all)."""
    per_source_terms = np.maximum((cut > 0).sum(axis=1), 1)
    level = theta / per_source_terms.max() if theta > 0 else 0.0
    chosen = np.argwhere(cut > level)
    if not len(chosen):
        chosen = np.argwhere(cut >= 0.5 * cut.max())
    plan = {}
    for si, tj in chosen:
        key = (int(si), int(tj))
        plan[key] = max(16, lists.read[key] * (GROWTH - 1))
    return plan


def _fetch(
    cursor: CursorWrapper,
    lists: Lists,
    averages: dict[UUID, float],
    plan: dict[tuple[int, int], int] | None,
    depth: int,
    idf: np.ndarray,
    average: float,
) -> None:
    """The first ``depth`` records of every list of the terms in scope whose kind some list of
    the pass admits (``plan`` None), or the next ``plan[list]`` records of the lists in the plan
    (a list: one part of one repository -- a "source" -- and one term)."""
    size = RECORD.itemsize
    live = (
        " JOIN indexing_repository r"
        " ON r.id = p.repository_id AND p.generation = r.active_generation"
    )
    if plan is None:
        kinds = [f for f in range(4) if lists.in_scope(np.asarray([f], dtype=np.int64))[0]]
        # the long lists' heads, and the short lists (packed, read whole) of the same terms
        # (each list named by its repository's and term's positions in the arrays sent)
        sql = (
            "SELECT array_position(%s::uuid[], p.repository_id), p.part,"  # noqa: S608
            " array_position(%s::text[], p.term), p.df,"
            " substring(p.postings FROM 1 FOR %s::int)"
            f" FROM search_termpostings p {live}"
            " WHERE p.repository_id = ANY(%s::uuid[]) AND p.term = ANY(%s::text[])"
            " AND p.part & 3 = ANY(%s::int[])"
            " UNION ALL"
            " SELECT array_position(%s::uuid[], b.repository_id), u.part,"
            " array_position(%s::text[], u.term), u.df, u.postings"
            " FROM search_termbucket b JOIN indexing_repository r"
            "   ON r.id = b.repository_id AND b.generation = r.active_generation"
            " CROSS JOIN LATERAL unnest(b.terms, b.parts, b.dfs, b.postings)"
            "   AS u(term, part, df, postings)"
            " WHERE b.repository_id = ANY(%s::uuid[]) AND b.bucket = ANY(%s::int[])"
            "   AND u.term = ANY(%s::text[])"
            "   AND u.part & 3 = ANY(%s::int[])"
        )
        repositories, kinds_sql = array_literal(lists.repositories), array_literal(kinds)
        params: list[Any] = [
            repositories, lists.terms, HEADER + depth * size, repositories, lists.terms, kinds_sql,
            repositories, lists.terms, repositories, array_literal(buckets(lists.terms)),
            lists.terms, kinds_sql,
        ]  # fmt: skip
    else:
        keys = list(plan)
        # Lists named by their source's and term's positions (each repository and term is
        # sent once, not once per list: a deep round names over a thousand lists).
        sql = (
            "SELECT w.source, p.part, w.term, p.df,"  # noqa: S608
            " substring(p.postings FROM w.start FOR w.len)"
            " FROM unnest(%s::int[], %s::int[], %s::int[], %s::int[]) AS w(source, term, start, len)"
            " JOIN unnest(%s::uuid[], %s::int[]) WITH ORDINALITY AS s(repository_id, part, n)"
            "   ON s.n = w.source"
            " JOIN unnest(%s::text[]) WITH ORDINALITY AS t(term, n) ON t.n = w.term"
            " JOIN search_termpostings p ON p.repository_id = s.repository_id"
            "   AND p.term = t.term AND p.part = s.part"
            f" {live}"
        )
        params = [
            array_literal(si + 1 for si, _tj in keys),
            array_literal(tj + 1 for _si, tj in keys),
            array_literal(HEADER + lists.read[key] * size + 1 for key in keys),
            array_literal(plan[key] * size for key in keys),
            array_literal(repository for repository, _part in lists.sources),
            array_literal(part for _repository, part in lists.sources),
            lists.terms,
        ]
    # (bytea in binary: the lists' records as they are stored, no hex to encode and decode)
    with binary_cursor(cursor) as binary:
        binary.execute(sql, params)
        rows = binary.fetchall()
    if plan is None:  # (positions count from 1)
        keys = [(lists.source(at - 1, part), term - 1) for at, part, term, *_ in rows]
    else:
        keys = [(source - 1, term - 1) for source, _part, term, *_ in rows]
    chunks = [bytes(row[4]) for row in rows]
    if plan is None:  # the first read of each list: its header first
        for key, value in zip(keys, chunks, strict=True):
            lists.base[key] = list_base(value)
        chunks = [value[HEADER:] for value in chunks]
    counts = np.asarray([len(value) // size for value in chunks], dtype=np.int64)
    for key, row, count in zip(keys, rows, counts, strict=True):
        lists.df[key] = int(row[3])
        lists.read[key] = lists.read.get(key, 0) + int(count)
    if not counts.sum():
        return
    records = np.frombuffer(b"".join(chunks), dtype=RECORD)
    term_of = np.repeat(np.asarray([tj for _si, tj in keys], dtype=np.int64), counts)
    source_of = np.repeat(np.asarray([si for si, _tj in keys], dtype=np.int64), counts)
    base = np.repeat(np.asarray([lists.base[key] for key in keys], dtype=np.int64), counts)
    ids, length, tf2, flags = decode(records, base)
    keep = lists.in_scope(flags)
    contribution = idf[term_of[keep]] * (BM25.k1 + 1) * saturation(tf2[keep], length[keep], average)
    lists.add(ids[keep], contribution, 1 << term_of[keep], source_of[keep], flags[keep])
    # Where each list now stops: the stored order's impact (the repository's own average).
    last = np.cumsum(counts) - 1
    source_average = np.asarray([averages[repository] for repository, _part in lists.sources])
    own = source_average[np.asarray([si for si, _tj in keys], dtype=np.int64)]
    impact = saturation(tf2[last[counts > 0]], length[last[counts > 0]], own[counts > 0])
    for key, value in zip([k for k, n in zip(keys, counts, strict=True) if n], impact, strict=True):
        lists.cut[key] = float(value)


def _cut_matrix(lists: Lists, idf: np.ndarray, slack: dict[UUID, float]) -> np.ndarray:
    """The most an unread record of each list (source x term) can add to a score (0 for the
    lists read to the end and for the parts no open list of the pass admits)."""
    cut = np.zeros((len(lists.sources), len(lists.terms)), dtype=np.float64)
    admitted = lists.in_scope(np.asarray([part & 3 for _r, part in lists.sources], dtype=np.int64))
    source_slack = [slack[repository] for repository, _part in lists.sources]
    for (si, tj), df in lists.df.items():
        if df > lists.read[(si, tj)] and admitted[si]:
            cut[si, tj] = idf[tj] * (BM25.k1 + 1) * lists.cut[(si, tj)] * source_slack[si]
    return cut
