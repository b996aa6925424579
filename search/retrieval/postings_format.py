"""The posting lists' format and how one generation's lists are built.

One ``search_termpostings`` row per (repository, lexeme): ``RECORD``s (chunk id, token count,
twice the field-weighted term frequency, test/doc flags) ordered by single-term BM25 impact,
best first, built from the chunks' stored ``tsvector`` in one statement
(``search.retrieval.postings`` reads them).
"""

from __future__ import annotations

from uuid import UUID

import numpy as np
from django.db.backends.utils import CursorWrapper

K1 = 1.2
B = 0.75
RECORD = np.dtype([("id", ">i8"), ("len", ">i4"), ("tf2", ">i2"), ("flags", "u1")])
TEST_FLAG, DOC_FLAG = 1, 2
RANK_WEIGHTS = [2 / 6, 2 / 6, 3 / 6, 1.0]  # ts_rank_cd's D, C, B, A: tf2 / 6 per position
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


def saturation(tf2: np.ndarray, length: np.ndarray, average: float | np.ndarray) -> np.ndarray:
    """``tf / (tf + k1 * (1 - b + b * len / avg))`` -- BM25 without ``idf * (k1 + 1)``."""
    tf = tf2.astype(np.float64) / 2.0
    norm = K1 * (1 - B + B * np.maximum(length, 1).astype(np.float64) / average)
    return tf / (tf + norm)
