"""Database access for search: a cursor per statement, and threads with connections of their own.

A failing or slow retrieval query must end its stage, not the whole search (or the caller's
transaction), so each runs inside ``transaction.atomic()`` with ``SET LOCAL statement_timeout``
(``search_cursor``).

A retrieval list can run on a second database connection while the first one works
(``run_beside``, ``soon``). The threads live as long as the process, so each keeps its database
connection between searches (Django opens one per thread and closes it when it is too old, as
around a request).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

T = TypeVar("T")
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
WORKERS = 4


@contextmanager
def search_cursor(timeout_ms: int = 5000, **settings: str | int) -> Iterator[CursorWrapper]:
    """A cursor in a savepoint with ``statement_timeout`` and any other ``SET LOCAL`` settings
    (names are checked: letters, digits, dots and underscores only)."""
    values = {"statement_timeout": str(int(timeout_ms))}
    for name, value in settings.items():
        setting = name.replace("__", ".")
        if not all(ch.isalnum() or ch in "._" for ch in setting):
            raise ValueError(f"bad setting name {name!r}")
        values[setting] = str(value)
    with transaction.atomic(), connection.cursor() as cursor:
        # one statement for all of them: a round trip each is not free on a loaded server
        calls = ", ".join("set_config(%s, %s, true)" for _ in values)
        cursor.execute(f"SELECT {calls}", [p for item in values.items() for p in item])
        yield cursor


@contextmanager
def binary_cursor(cursor: CursorWrapper) -> Iterator[CursorWrapper]:
    """A cursor on ``cursor``'s connection (the same transaction and ``SET LOCAL`` settings)
    whose results come in PostgreSQL's binary format: a ``bytea`` arrives as its bytes, not as
    hex text twice the size that the server must encode and the client decode (the postings
    lists are read this way). Parameters are bound by the server, so give them casts where the
    type matters. Django's wrapper is kept: statements are counted and logged as any other."""
    raw = psycopg.Cursor(cursor.db.connection)
    raw.format = psycopg.pq.Format.BINARY
    with cursor.db._prepare_cursor(raw) as wrapped:
        yield wrapped


def array_literal(values: Iterable[int | UUID]) -> str:
    """``values`` as one array literal, to cast in the statement (``%s::int[]``): psycopg
    adapts a list parameter element by element in Python, which costs more than the statement
    itself for the thousands of list positions a deep round names. Numbers and UUIDs only (no
    element needs quoting)."""
    return "{" + ",".join(map(str, values)) + "}"


# Threads with connections of their own


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
