"""A database cursor for one search statement: its own savepoint and a statement timeout.

A failing or slow retrieval query must end its stage, not the whole search (or the caller's
transaction), so each runs inside ``transaction.atomic()`` with ``SET LOCAL statement_timeout``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper


@contextmanager
def search_cursor(timeout_ms: int = 5000, **settings: str | int) -> Iterator[CursorWrapper]:
    """A cursor in a savepoint with ``statement_timeout`` and any other ``SET LOCAL`` settings
    (names are checked: letters, digits, dots and underscores only)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(int(timeout_ms))])
        for name, value in settings.items():
            setting = name.replace("__", ".")
            if not all(ch.isalnum() or ch in "._" for ch in setting):
                raise ValueError(f"bad setting name {name!r}")
            cursor.execute("SELECT set_config(%s, %s, true)", [setting, str(value)])
        yield cursor
