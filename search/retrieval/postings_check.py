"""Exact BM25 scores of chunks read by id (or of the first chunks matching every word), with
the scope and permission filters applied in the same statement (``search.retrieval.postings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.db.backends.utils import CursorWrapper

from search.retrieval.bm25 import BM25
from search.retrieval.db import array_literal
from search.retrieval.postings_format import RANK_WEIGHTS, saturation
from search.retrieval.query import lexeme
from search.retrieval.scope import LIVE_CHUNKS_SQL, ScopeFilter

# Chunks holding every informative word, read first (GIN, any order) when the lists are long:
# real scores, so a cut-off to prune with before the lists have shown the chunks that match
# the whole query.
SEED_ROWS = 100


@dataclass
class ExactScores:
    """Chunks read by id: exact scores (and test/doc flags) of those in scope, and those out
    of it."""

    scores: dict[int, float] = field(default_factory=dict)
    flags: dict[int, int] = field(default_factory=dict)
    rejected: set[int] = field(default_factory=set)


def check_chunks(
    cursor: CursorWrapper,
    ids: list[int],
    terms: list[str],
    idf: np.ndarray,
    informative: list[str],
    boost: float,
    scope: ScopeFilter,
    average: float,
    exact: ExactScores,
    seed: str | None = None,
) -> None:
    """Exact scores of ``ids`` that are in scope (filters applied here); the rest rejected.
    With ``seed`` (a tsquery) instead: of the first ``SEED_ROWS`` chunks in scope matching it.

    ``ts_rank_cd`` of one lexeme with normalisation 0 sums its positions' weights, so with the
    weights {D, C, B, A} = {2, 2, 3, 6} / 6 it is ``tf2 / 6`` -- cheaper than ``unnest``, which
    materialises every lexeme of the vector.
    """
    columns = ", ".join(
        "round(ts_rank_cd(%s::float4[], c.search_vector, %s::tsquery, 0) * 6)::int" for _ in terms
    )
    which, value = (
        ("c.id = ANY(%s::bigint[])", array_literal(ids))
        if seed is None
        else ("c.search_vector @@ %s", seed)
    )
    cursor.execute(
        f"SELECT c.id, c.token_count, c.is_test::int + 2 * c.is_doc::int, {columns}"  # noqa: S608
        f" FROM indexing_chunk c {LIVE_CHUNKS_SQL}"
        f" WHERE {which} AND r.id = ANY(%s::uuid[]) AND {scope.sql}"
        + (f" LIMIT {SEED_ROWS:d}" if seed is not None else ""),
        [*(p for t in terms for p in (RANK_WEIGHTS, lexeme(t))),
         value, array_literal(scope.repository_ids), *scope.params],
    )  # fmt: skip
    wanted = [j for j, t in enumerate(terms) if t in set(informative)]
    rows = cursor.fetchall()
    found = set()
    if rows:
        table = np.asarray(rows, dtype=np.float64)
        tf2 = table[:, 3:]
        sat = saturation(tf2, np.repeat(table[:, 1:2], len(terms), axis=1), average)
        scores = (idf[None, :] * (BM25.k1 + 1) * sat).sum(axis=1)
        if wanted:
            scores = np.where((tf2[:, wanted] > 0).all(axis=1), scores * boost, scores)
        read = table[:, 0].astype(np.int64).tolist()
        flags = table[:, 2].astype(np.int64).tolist()
        for chunk_id, score, flag in zip(read, scores.tolist(), flags, strict=True):
            found.add(chunk_id)
            exact.scores[chunk_id] = score
            exact.flags[chunk_id] = flag
    if seed is None:
        exact.rejected.update(i for i in ids if i not in found)
