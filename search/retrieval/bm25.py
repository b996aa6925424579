"""Temporary re-export (issue 30): BM25's parameters live in ``indexing.bm25``.

The term postings are built with them by indexing (``indexing.services.search_stats``), so they
moved to that lower layer. The full-text modules not yet changed to import them from there
(``search.retrieval.fulltext``, ``postings``, ``postings_memory``, ``postings_check``) still
import them from here; delete this module when they do.
"""

from __future__ import annotations

from indexing.bm25 import BM25

__all__ = ["BM25"]
