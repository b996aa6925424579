"""A database cursor for one search statement: its own savepoint and a statement timeout.

A failing or slow retrieval query must end its stage, not the whole search (or the caller's
transaction), so each runs inside ``transaction.atomic()`` with ``SET LOCAL statement_timeout``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from uuid import UUID

import psycopg
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper


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
