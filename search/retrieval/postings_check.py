"""Exact BM25 scores of chunks read by id (or of the first chunks matching every word), with
the scope and permission filters applied in the same statement (``search.retrieval.postings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.db.backends.utils import CursorWrapper

from search.retrieval.postings_format import K1, RANK_WEIGHTS, saturation
from search.retrieval.query import lexeme
from search.retrieval.scope import LIVE_CHUNKS_SQL, ScopeFilter

# Chunks holding every informative word, read first (GIN, any order) when the lists are long:
# real scores, so a cut-off to prune with before the lists have shown the chunks that match
# the whole query.
SEED_ROWS = 100


@dataclass
class ExactScores:
    """Chunks read by id: exact scores of those in scope, and those out of it."""

    scores: dict[int, float] = field(default_factory=dict)
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
    which, value = ("c.id = ANY(%s)", ids) if seed is None else ("c.search_vector @@ %s", seed)
    cursor.execute(
        f"SELECT c.id, c.token_count, {columns}"  # noqa: S608
        f" FROM indexing_chunk c {LIVE_CHUNKS_SQL}"
        f" WHERE {which} AND r.id = ANY(%s) AND {scope.sql}"
        + (f" LIMIT {SEED_ROWS:d}" if seed is not None else ""),
        [*(p for t in terms for p in (RANK_WEIGHTS, lexeme(t))),
         value, scope.repository_ids, *scope.params],
    )  # fmt: skip
    wanted = [j for j, t in enumerate(terms) if t in set(informative)]
    rows = cursor.fetchall()
    found = set()
    if rows:
        table = np.asarray(rows, dtype=np.float64)
        tf2 = table[:, 2:]
        sat = saturation(tf2, np.repeat(table[:, 1:2], len(terms), axis=1), average)
        scores = (idf[None, :] * (K1 + 1) * sat).sum(axis=1)
        if wanted:
            scores = np.where((tf2[:, wanted] > 0).all(axis=1), scores * boost, scores)
        for chunk_id, score in zip(table[:, 0].astype(np.int64), scores, strict=True):
            found.add(int(chunk_id))
            exact.scores[int(chunk_id)] = float(score)
    if seed is None:
        exact.rejected.update(i for i in ids if i not in found)
