"""The posting lists a search process served last, kept at hand (``postings_cache.HOT_LISTS``).

A list at hand is a view of a mapped pack (``postings_files``): while it is kept, so is the
pack's mapping, and with it the pages of a file that may have been merged away or removed long
ago. So the lists of a generation whose packs changed go at once (``drop``, called by
``postings_files`` when it unmaps a pack): a process maps the packs its generations hold now,
however many searches it serves and however many packs were written and merged meanwhile.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")
# repository (its UUID as an int), generation, statistics' build, term: ``postings_cache.Key``
Key = tuple[int, int, int, str]
Generation = tuple[int, int, int]


class HotLists(Generic[V]):
    """Up to ``budget`` lists by key, the least recently used out first; a generation's all
    out at once by ``drop`` (thread-safe)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._kept: OrderedDict[Key, V] = OrderedDict()
        # each generation's keys put since the index was last rebuilt (some gone since: a list
        # pushed out does not pay to leave the index; it is rebuilt past twice the budget)
        self._index: dict[Generation, set[Key]] = {}
        self._indexed = 0
        self._lock = threading.Lock()

    def get_many(self, keys: list[Key]) -> dict[Key, V]:
        found = {}
        kept = self._kept
        with self._lock:
            for key in keys:
                value = kept.get(key)
                if value is not None:
                    kept.move_to_end(key)
                    found[key] = value
        return found

    def put_many(self, entries: dict[Key, V]) -> None:
        kept, index = self._kept, self._index
        last, keys = None, set()
        with self._lock:
            for key, value in entries.items():
                if key in kept:
                    kept.move_to_end(key)
                else:
                    if key[:3] != last:  # a search's keys come by generation
                        last = key[:3]
                        keys = index.get(last) or index.setdefault(last, set())
                    keys.add(key)
                    self._indexed += 1
                kept[key] = value
            while len(kept) > self.budget:
                kept.popitem(last=False)
            if self._indexed > 4 * self.budget + 1024:
                self._reindex()

    def drop(self, generation: Generation) -> int:
        """Let go of every list of ``generation``: how many."""
        with self._lock:
            keys = self._index.pop(generation, set())
            self._indexed -= len(keys)
            return sum(self._kept.pop(key, None) is not None for key in keys)

    def _reindex(self) -> None:
        self._index = {}
        for key in self._kept:
            self._index.setdefault(key[:3], set()).add(key)
        self._indexed = len(self._kept)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._index.clear()
            self._indexed = 0

    def __len__(self) -> int:
        return len(self._kept)
