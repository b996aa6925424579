"""The posting lists a search process served last, kept at hand (``postings_cache.HOT_LISTS``).

A list at hand is a view of a mapped pack (``postings_files``): while it is kept, so is the
pack's mapping, and with it the pages of a file that may have been merged away or removed long
ago. So the lists are kept by generation too, and those of a generation whose packs changed go
at once (``drop``, called by ``postings_files`` when it unmaps a pack): a process maps the packs
its generations hold now, however many searches it serves and however many packs were written
and merged meanwhile.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
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
        self._by_generation: dict[Hashable, set[Key]] = {}
        self._lock = threading.Lock()

    def get_many(self, keys: list[Key]) -> dict[Key, V]:
        found = {}
        with self._lock:
            for key in keys:
                value = self._kept.get(key)
                if value is not None:
                    self._kept.move_to_end(key)
                    found[key] = value
        return found

    def put_many(self, entries: dict[Key, V]) -> None:
        with self._lock:
            for key, value in entries.items():
                self._kept[key] = value
                self._kept.move_to_end(key)
                self._by_generation.setdefault(key[:3], set()).add(key)
            while len(self._kept) > self.budget:
                key, _value = self._kept.popitem(last=False)
                self._forget_key(key)

    def drop(self, generation: Generation) -> int:
        """Let go of every list of ``generation``: how many."""
        with self._lock:
            keys = self._by_generation.pop(generation, set())
            for key in keys:
                self._kept.pop(key, None)
            return len(keys)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._by_generation.clear()

    def generations(self) -> int:
        return len(self._by_generation)

    def __len__(self) -> int:
        return len(self._kept)

    def _forget_key(self, key: Key) -> None:
        generation = key[:3]
        keys = self._by_generation.get(generation)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_generation[generation]
