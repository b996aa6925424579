"""The query embeddings of this process, kept for repeated queries (a bounded LRU).

A search embeds each query text (and each expansion) before the vector lookup: 10-20 ms of
model time on a CPU. The same text in the same embedding space always gives the same vector,
so repeated queries (paging, the web page's re-runs, a team asking the same thing) reuse it.
Keyed by (space key, text); ``QUERY_VECTOR_CACHE_SIZE`` entries (384 floats each, ~2 KB).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

QUERY_VECTOR_CACHE_SIZE = 2048

_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_lock = threading.Lock()
stats = {"hits": 0, "misses": 0}


def embed_queries(embedder: Any, queries: list[str]) -> np.ndarray:
    """``embedder.embed(queries)``, with each text embedded at most once per process while it
    stays among the most recently used."""
    space = str(getattr(embedder, "space_key", ""))
    found: dict[str, np.ndarray] = {}
    with _lock:
        for text in queries:
            vector = _cache.get((space, text))
            if vector is not None:
                _cache.move_to_end((space, text))
                found[text] = vector
    missing = list(dict.fromkeys(q for q in queries if q not in found))
    with _lock:
        stats["hits"] += len(queries) - len(missing)
        stats["misses"] += len(missing)
    if missing:
        vectors = np.asarray(embedder.embed(missing))
        with _lock:
            for text, vector in zip(missing, vectors, strict=True):
                vector = np.array(vector, copy=True)
                vector.setflags(write=False)
                found[text] = vector
                _cache[(space, text)] = vector
                _cache.move_to_end((space, text))
            while len(_cache) > QUERY_VECTOR_CACHE_SIZE:
                _cache.popitem(last=False)
    return np.stack([found[text] for text in queries])


def clear() -> None:
    with _lock:
        _cache.clear()
        stats.update(hits=0, misses=0)
