"""A bounded map kept in a process's memory, least recently used out first (thread-safe).

The search caches (term posting lists, exact-match counts) keep entries up to a budget: each
entry weighs ``weight(value)`` (1 unless told), and the oldest go once the total passes it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    def __init__(self, budget: int, weight: Callable[[V], int] = lambda _value: 1) -> None:
        self.budget = budget
        self.used = 0
        self._weight = weight
        self._kept: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        found = {}
        with self._lock:
            for key in keys:
                value = self._kept.get(key)
                if value is not None:
                    self._kept.move_to_end(key)
                    found[key] = value
        return found

    def put(self, key: K, value: V) -> None:
        self.put_many({key: value})

    def put_many(self, entries: dict[K, V]) -> None:
        with self._lock:
            for key, value in entries.items():
                old = self._kept.pop(key, None)
                if old is not None:
                    self.used -= self._weight(old)
                self._kept[key] = value
                self.used += self._weight(value)
            while self.used > self.budget and self._kept:
                _key, dropped = self._kept.popitem(last=False)
                self.used -= self._weight(dropped)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self.used = 0

    def __len__(self) -> int:
        return len(self._kept)
