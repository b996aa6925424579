"""The query embeddings of this process, kept for repeated queries (a bounded LRU).

A search embeds each query text (and each expansion) before the vector lookup: 10-20 ms of
model time on a CPU. The same text in the same embedding space always gives the same vector,
so repeated queries (paging, the web page's re-runs, a team asking the same thing) reuse it.
Within one run, ``QueryMemoEmbedder`` embeds each list of texts once even when the scoped and
the left-out vector lists ask for it at the same time.
Keyed by (space key, text); ``QUERY_VECTOR_CACHE_SIZE`` entries (384 floats each, ~2 KB).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
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


class QueryMemoEmbedder:
    """The run's embedder, embedding each list of query texts once: the left-out lists search
    with the same query vectors as the scoped ones."""

    def __init__(self, get_embedder: Callable[[], Any]) -> None:
        self._get_embedder = get_embedder
        self._embedder: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._embedder is None:
                self._embedder = _Memo(self._get_embedder())
            return self._embedder


class _Memo:
    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._vectors: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()  # the two vector lists may ask at the same time

    def embed_queries(self, texts: Sequence[str]) -> Any:
        key = tuple(texts)
        with self._lock:
            if key not in self._vectors:
                self._vectors[key] = self._embedder.embed_queries(list(texts))
            return self._vectors[key]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)
