"""The query embeddings of this process, kept for repeated queries (a bounded LRU).

A search embeds each query text (and each expansion) before the vector lookup: 10-20 ms of
model time on a CPU. The same text in the same embedding space always gives the same vector,
so repeated queries (paging, the web page's re-runs, a team asking the same thing) reuse it.
Keyed by (space key, text); ``QUERY_VECTOR_CACHE_SIZE`` entries (384 floats each, ~2 KB).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from search.lru import Lru

QUERY_VECTOR_CACHE_SIZE = 2048

_cache: Lru[tuple[str, str], np.ndarray] = Lru(QUERY_VECTOR_CACHE_SIZE)
_lock = threading.Lock()
stats = {"hits": 0, "misses": 0}


def embed_queries(embedder: Any, queries: list[str]) -> np.ndarray:
    """``embedder.embed_queries(queries)``, with each text embedded at most once per process while it
    stays among the most recently used."""
    space = str(getattr(embedder, "space_key", ""))
    found = {text: vector for (_space, text), vector in
             _cache.get_many((space, text) for text in queries).items()}  # fmt: skip
    missing = list(dict.fromkeys(q for q in queries if q not in found))
    with _lock:
        stats["hits"] += len(queries) - len(missing)
        stats["misses"] += len(missing)
    if missing:
        vectors = np.asarray(embedder.embed_queries(missing))
        for text, vector in zip(missing, vectors, strict=True):
            kept = np.array(vector, copy=True)
            kept.setflags(write=False)
            found[text] = kept
        _cache.put_many({(space, text): found[text] for text in missing})
    return np.stack([found[text] for text in queries])


def clear() -> None:
    _cache.clear()
    with _lock:
        stats.update(hits=0, misses=0)
