"""Temporary re-export (issue 30): the posting lists' format lives in ``indexing.postings_format``.

The lists are built by indexing (``indexing.services.search_stats``), so their format moved to
that lower layer. The readers not yet changed to import it from there
(``search.retrieval.postings``, ``postings_cache``, ``postings_memory``, ``postings_check`` and
``tests/search/test_search_postings.py``) still import it from here; delete this module when
they do.
"""

from __future__ import annotations

from indexing.postings_format import (
    DOC_FLAG,
    HEADER,
    MAX_LEN,
    RANK_WEIGHTS,
    RARE_DF,
    RECORD,
    TEST_FLAG,
    buckets,
    decode,
    list_base,
    saturation,
)

__all__ = [
    "DOC_FLAG",
    "HEADER",
    "MAX_LEN",
    "RANK_WEIGHTS",
    "RARE_DF",
    "RECORD",
    "TEST_FLAG",
    "buckets",
    "decode",
    "list_base",
    "saturation",
]
