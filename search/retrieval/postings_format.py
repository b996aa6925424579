"""The posting lists' format and how one generation's lists are built.

``search_termpostings`` rows per (repository, lexeme, ``part``): one list for each kind of chunk
(``part & 3``: the test/doc flags, so a scope that leaves tests and docs out never reads their
records, and the tests and docs it left out are read from lists of their own) and each 2^32
ids (``part >> 2``: a record holds 32 bits of id, so chunk ids of one generation may span any
range). Lists of at most ``RARE_DF`` records -- most lexemes of a code base are in one or two
chunks -- are packed instead, many to a ``search_termbucket`` row chosen by a hash of the lexeme
(``BUCKET_SQL``), so they do not pay a row and an index entry each. A list is an 8-byte header (``HEADER``: the chunk id its record ids are relative to,
big-endian) and then 8-byte ``RECORD``s ordered by single-term BM25 impact, best first, built
from the chunks' stored ``tsvector`` in one statement (``search.retrieval.postings`` reads
them). A record is two big-endian words:

- ``id``: the chunk id less the header's (less than 2^32 by construction);
- ``word``: the token count (15 bits, saturating at ``MAX_LEN`` -- a chunk is at most the
  chunker's 6,000 characters, so it never saturates in practice), the test/doc flags (2 bits)
  and twice the field-weighted term frequency (14 bits: a ``tsvector`` keeps at most 256
  positions of a lexeme, so at most ``6 * 256``).

The previous formats (one list per lexeme, one 15-byte or 8-byte record per chunk, ids relative
to the generation's smallest in 32 bits) mixed the kinds and could not hold a generation whose
ids span 2^32 or more.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from uuid import UUID

import numpy as np
from django.db.backends.utils import CursorWrapper

from search.retrieval.bm25 import BM25

RECORD = np.dtype([("id", ">u4"), ("word", ">u4")])
TEST_FLAG, DOC_FLAG = 1, 2
MAX_LEN = (1 << 15) - 1
HEADER = 8
RANK_WEIGHTS = BM25.rank_weights()[0]  # ts_rank_cd's D, C, B, A: tf2 / 6 per position
# twice the field-weighted term frequency of an ``unnest(tsvector)`` row ``u``
TF2_SQL = (
    "(6 * cardinality(array_positions(u.weights, 'A'))"
    " + 3 * cardinality(array_positions(u.weights, 'B'))"
    " + 2 * (cardinality(u.weights) - cardinality(array_positions(u.weights, 'A'))"
    " - cardinality(array_positions(u.weights, 'B'))))"
)
ID_BITS = 32
RARE_DF = 2  # lists of at most this many records are packed into ``search_termbucket`` rows
BUCKETS = 2048  # buckets per repository: ~20 short lists a row at 12 k chunks (~1 kB, inline)
BUCKET_SQL = f"(('x' || left(md5({{term}}), 4))::bit(16)::int & {BUCKETS - 1})"
_BUILD = f"""
WITH lists AS MATERIALIZED (
    SELECT p.lexeme, p.part, count(*) AS df,
           int8send(min(p.block_base)) || string_agg(
               int8send(((p.id - p.block_base) << 32) | (p.len << 16) | (p.flags << 14) | p.tf2),
               ''::bytea
               ORDER BY p.tf2 / (p.tf2 + 2 * {BM25.k1} * (1 - {BM25.b} + {BM25.b} * greatest(p.len, 1)
                                                      / %(average)s::float8)) DESC, p.id)
             AS postings
    FROM (
        SELECT q.*, ((q.id - q.base) >> {ID_BITS}) * 4 + q.flags AS part,
               q.base + (((q.id - q.base) >> {ID_BITS}) << {ID_BITS}) AS block_base
        FROM (
            SELECT c.id, b.base, least(c.token_count, {MAX_LEN}) AS len,
                   c.is_test::int + 2 * c.is_doc::int AS flags, u.lexeme, {TF2_SQL} AS tf2
            FROM indexing_chunk c CROSS JOIN LATERAL unnest(c.search_vector) u
            CROSS JOIN (SELECT min(id) AS base FROM indexing_chunk
                        WHERE repository_id = %(repository)s AND generation = %(generation)s) b
            WHERE c.repository_id = %(repository)s AND c.generation = %(generation)s
              AND length(u.lexeme) <= 128
        ) q
    ) p
    GROUP BY p.lexeme, p.part
), long_lists AS (
    INSERT INTO search_termpostings (repository_id, generation, term, part, df, postings)
    SELECT %(repository)s, %(generation)s, lexeme, part, df, postings
    FROM lists WHERE df > {RARE_DF}
)
INSERT INTO search_termbucket (repository_id, generation, bucket, terms, parts, dfs, postings)
SELECT %(repository)s, %(generation)s, bucket, array_agg(lexeme ORDER BY lexeme, part),
       array_agg(part ORDER BY lexeme, part), array_agg(df ORDER BY lexeme, part),
       array_agg(postings ORDER BY lexeme, part)
FROM (SELECT *, {BUCKET_SQL.format(term="lexeme")} AS bucket FROM lists WHERE df <= {RARE_DF}) r
GROUP BY bucket
"""  # noqa: S608 -- only constants are interpolated; values are placeholders


def build_postings(
    cursor: CursorWrapper, repository_id: UUID, generation: int, average: float
) -> None:
    """Write the posting lists of one generation (its old rows already deleted)."""
    cursor.execute(
        _BUILD,
        {"repository": repository_id, "generation": generation, "average": average or 1.0},
    )


def buckets(terms: Iterable[str]) -> list[int]:
    """The ``search_termbucket`` rows that may hold short lists of ``terms`` (``BUCKET_SQL``)."""
    found = {
        int(hashlib.md5(t.encode(), usedforsecurity=False).hexdigest()[:4], 16) & (BUCKETS - 1)
        for t in terms
    }
    return sorted(found)


def list_base(value: bytes) -> int:
    """The chunk id a list's record ids are relative to (its first ``HEADER`` bytes)."""
    return int.from_bytes(value[:HEADER], "big", signed=True)


def decode(records: np.ndarray, base: np.ndarray | int) -> tuple[np.ndarray, ...]:
    """Chunk ids, token counts, ``tf2`` and flags of ``RECORD``s (``base`` per record or one)."""
    word = records["word"].astype(np.int64)
    ids = records["id"].astype(np.int64) + base
    return ids, word >> 16, word & 0x3FFF, (word >> 14) & 3


def saturation(tf2: np.ndarray, length: np.ndarray, average: float | np.ndarray) -> np.ndarray:
    """``tf / (tf + k1 * (1 - b + b * len / avg))`` -- BM25 without ``idf * (k1 + 1)``."""
    tf = tf2.astype(np.float64) / 2.0
    norm = BM25.k1 * (1 - BM25.b + BM25.b * np.maximum(length, 1).astype(np.float64) / average)
    return tf / (tf + norm)
