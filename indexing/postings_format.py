"""The posting lists' format, shared by the build (indexing) and the readers (search).

The term postings of a generation are built in the generation swap
(``indexing.services.search_stats``) and read by every full-text search
(``search.retrieval.postings_cache``, ``postings_memory``, ``fulltext.corpus_stats``), so their format
lives here, in the lower layer, and both sides import it.

``search_termpostings`` rows per (repository, lexeme, ``part``): one list for each kind of chunk
(``part & 3``: the test/doc flags, so a scope that leaves tests and docs out never reads their
records, and the tests and docs it left out are read from lists of their own) and each 2^32
ids (``part >> 2``: a record holds 32 bits of id, so chunk ids of one generation may span any
range). Lists of at most ``RARE_DF`` records -- most lexemes of a code base are in one or two
chunks -- are packed instead, many to a ``search_termbucket`` row chosen by a hash of the lexeme
(``BUCKET_SQL``; ``buckets`` is its twin in Python), so they do not pay a row and an index entry
each. A list is an 8-byte header (``HEADER``: the chunk id its record ids are relative to,
big-endian) and then 8-byte ``RECORD``s ordered by single-term BM25 impact, best first
(``tf / (tf + k1 * (1 - b + b * len / avg))``, the parameters of ``indexing.bm25``), built
from the chunks' stored ``tsvector`` in one statement. A record is two big-endian words:

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

import numpy as np

RECORD = np.dtype([("id", ">u4"), ("word", ">u4")])
TEST_FLAG, DOC_FLAG = 1, 2
MAX_LEN = (1 << 15) - 1
HEADER = 8
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
