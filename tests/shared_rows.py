"""Rows built once and read by many tests: a transaction on the test database that lives as
long as a module- (or session-) scoped fixture.

Indexing a real repository takes seconds; a module whose tests only read it indexes it once.
The fixture opens a transaction and builds the rows in it; every test's own transaction
(pytest-django's ``db``) is then a savepoint inside it, rolled back after the test, so a test
that changes or adds rows still leaves the shared ones as they were built. At the end the
outer transaction is rolled back too: the next module starts from an empty database.

Nothing here is committed, as nothing a per-test fixture built was: queued tasks
(``delay_on_commit``) are never sent and other connections do not see the rows, exactly as
before. Two rules keep the other tests of the module as they were (both in tests/conftest.py):

- the module's tests that do not ask for a fixture made with ``rows_fixture`` run before those
  that do, so they never see its rows;
- a test that needs committed rows (``transactional_db``) cannot run inside the open
  transaction: it fails with a message instead of truncating the shared rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
from django.db import transaction

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_open: list[str] = []  # the fixtures whose transaction is open now, innermost last
ROW_FIXTURES: set[str] = set()  # the names of the fixtures made with rows_fixture


def rows_fixture(scope: str = "module") -> Callable[[F], F]:
    """``pytest.fixture(scope=scope)`` for a fixture that yields from ``shared_rows``; its name
    is known to the ordering rule above."""

    def declare(function: F) -> F:
        ROW_FIXTURES.add(function.__name__)
        return pytest.fixture(scope=scope)(function)  # type: ignore[call-overload,no-any-return]

    return declare


@contextmanager
def shared_rows(django_db_blocker: Any, build: Callable[[], T], name: str = "") -> Iterator[T]:
    """Run ``build`` in a transaction kept open while the caller's fixture lives; yield what it
    returned; roll everything back at the end."""
    outer = transaction.atomic()
    with django_db_blocker.unblock():
        outer.__enter__()
        try:
            built = build()
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    _open.append(name or getattr(build, "__name__", "shared rows"))
    try:
        yield built
    finally:
        _open.pop()
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def open_shared_rows() -> list[str]:
    """The shared-row fixtures alive now (their transaction is open)."""
    return list(_open)
