"""Database access for search: a cursor per statement, and threads with connections of their own.

A failing or slow retrieval query must end its stage, not the whole search (or the caller's
transaction), so each runs with its own ``statement_timeout`` (``search_cursor``): set locally
in the same query string, ahead of the statement (its implicit transaction's ``SET LOCAL``: no
round trip of its own, nothing left behind on the connection), and in a savepoint only when the
caller has a transaction open.

A retrieval list can run on a second database connection while the first one works
(``run_beside``, ``soon``). The threads live as long as the process, so each keeps its database
connection between searches (Django opens one per thread and closes it when it is too old, as
around a request).

A search may read from a streaming replica (``search.retrieval.replicas`` chooses it):
``reading_from(alias)`` names the database for the block, ``connection`` here is that
database's connection (Django's own for the primary), the ORM reads from it through
``SearchReadRouter``, and the retrieval threads inherit the choice. Writes always go to the
primary.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

T = TypeVar("T")
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
WORKERS = 4

_READ_FROM: contextvars.ContextVar[str] = contextvars.ContextVar(
    "search_reads_from", default=DEFAULT_DB_ALIAS
)


def read_alias() -> str:
    """The database alias this search reads from (``default``: the primary)."""
    return _READ_FROM.get()


@contextmanager
def reading_from(alias: str) -> Iterator[None]:
    """Searches in the block (and the retrieval threads they start) read from ``alias``."""
    token = _READ_FROM.set(alias)
    try:
        yield
    finally:
        _READ_FROM.reset(token)


class _ReadConnection:
    """The connection of the database the current search reads from, in this thread."""

    def __getattr__(self, name: str) -> Any:
        return getattr(connections[_READ_FROM.get()], name)


connection: BaseDatabaseWrapper = _ReadConnection()  # type: ignore[assignment]


class SearchReadRouter:
    """Django's database router (``DATABASE_ROUTERS``): ORM reads inside ``reading_from`` go
    to that database; writes, migrations and everything else to the primary."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        alias = _READ_FROM.get()
        return None if alias == DEFAULT_DB_ALIAS else alias

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, first: Any, second: Any, **hints: Any) -> bool:
        return True  # one database: a replica holds the primary's rows

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


@contextmanager
def search_cursor(timeout_ms: int = 5000, **settings: str | int) -> Iterator[CursorWrapper]:
    """A cursor whose every statement runs with ``statement_timeout`` and any other settings
    set locally (names and values are checked: letters, digits, dots and underscores only).

    Outside a transaction the settings go ahead of each statement in the same query string: a
    string of several statements is one implicit transaction, which ``set_config(..., true)``
    lasts to its end, and PostgreSQL times each statement of it on its own. Inside the caller's
    transaction, in a savepoint, so that a failing statement does not abort it. Where the
    connection binds parameters on the server (one statement per string), a transaction with
    the settings set in a statement of their own, as ``binary_cursor`` does."""
    values = {"statement_timeout": str(int(timeout_ms))}
    for name, value in settings.items():
        setting = name.replace("__", ".")
        if not all(ch.isalnum() or ch in "._" for ch in setting + str(value)):
            raise ValueError(f"bad setting {name!r}={value!r}")
        values[setting] = str(value)
    calls = ", ".join(f"set_config('{name}', '{value}', true)" for name, value in values.items())
    prefix = f"SELECT {calls}; "
    with contextlib.ExitStack() as stack:
        alias = read_alias()
        if connection.in_atomic_block:
            stack.enter_context(transaction.atomic(using=alias))
        cursor = stack.enter_context(connection.cursor())
        if isinstance(cursor.cursor, psycopg.ClientCursor):
            yield _SettingsCursor(cursor, prefix)
            return
        stack.enter_context(transaction.atomic(using=alias))
        cursor.execute(prefix.rstrip("; "))
        yield cursor


class _SettingsCursor(CursorWrapper):
    """``cursor`` with ``prefix`` (the settings) sent ahead of each statement, in its string."""

    def __init__(self, cursor: CursorWrapper, prefix: str) -> None:
        super().__init__(cursor.cursor, cursor.db)
        self.wrapped, self.prefix = cursor, prefix

    def execute(self, sql: Any, params: Any = None) -> Any:
        if not isinstance(sql, str):
            raise TypeError("a search cursor's statements are strings")
        found = self.wrapped.execute(self.prefix + sql, params)
        self.cursor.nextset()  # the statement's result, after the settings'
        return found

    def executemany(self, sql: Any, param_list: Any) -> Any:
        raise NotImplementedError("one statement at a time in a search cursor")

    def apply(self) -> None:
        """The settings alone, for the rest of the transaction (``binary_cursor``)."""
        self.wrapped.execute(self.prefix.rstrip("; "))


@contextmanager
def binary_cursor(cursor: CursorWrapper) -> Iterator[CursorWrapper]:
    """A cursor on ``cursor``'s connection (with ``cursor``'s settings, in a transaction when
    ``cursor`` sent them with each statement) whose results come in PostgreSQL's binary format:
    a ``bytea`` arrives as its bytes, not as hex text twice the size that the server must encode
    and the client decode (the postings lists are read this way). Parameters are bound by the
    server, so give them casts where the type matters. Django's wrapper is kept: statements are
    counted and logged as any other."""
    with contextlib.ExitStack() as stack:
        if isinstance(cursor, _SettingsCursor):
            stack.enter_context(transaction.atomic(using=cursor.db.alias))
            cursor.apply()
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
    try:  # the thread reads from the caller's database (``reading_from``)
        context = contextvars.copy_context()
        return pool.submit(context.run, _with_fresh_connection, function, *args)
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
