"""Running a retrieval list on a second database connection while the first one works.

The threads live as long as the process, so each keeps its database connection between searches
(Django opens one per thread and closes it when it is too old, as around a request).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import connection

T = TypeVar("T")
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
WORKERS = 4


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="retrieval")
        return _POOL


_BUSY = 0  # tasks submitted and not finished, in this process


def _with_fresh_connection(function: Callable[..., Any], *args: Any) -> Any:
    global _BUSY
    try:
        connection.close_if_unusable_or_obsolete()
        try:
            return function(*args)
        finally:
            # Kept for the next search unless CONN_MAX_AGE says otherwise (0 in tests).
            connection.close_if_unusable_or_obsolete()
    finally:
        with _POOL_LOCK:
            _BUSY -= 1


def run_beside(function: Callable[..., Any], *args: Any) -> Future[Any]:
    """Start ``function(*args)`` in a retrieval thread; the caller waits on the future.

    Only for work that needs no uncommitted data of the caller's transaction: the thread's
    connection cannot see it.
    """
    global _BUSY
    pool = _pool()
    with _POOL_LOCK:
        _BUSY += 1
    try:
        return pool.submit(_with_fresh_connection, function, *args)
    except BaseException:
        with _POOL_LOCK:
            _BUSY -= 1
        raise


def busy() -> int:
    """Retrieval tasks of this process submitted and not finished (running or queued)."""
    with _POOL_LOCK:
        return _BUSY


def soon(function: Callable[..., T], *args: Any) -> Callable[[], T]:
    """``function(*args)`` started now in a retrieval thread, when that thread's connection
    sees what this one does (no open transaction) and a thread is free; else run here, when
    its result is asked for. Returns the call that gives the result (or raises its error)."""
    if connection.in_atomic_block or busy() >= WORKERS:
        return functools.partial(function, *args)
    return run_beside(function, *args).result
