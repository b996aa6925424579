"""A search cursor's statement timeout: it ends the statement, not the caller's transaction, and
leaves no setting behind on the connection."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection, transaction

from search.retrieval.db import binary_cursor, search_cursor


def _setting(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        return str(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_slow_statement_is_cancelled_and_the_connection_keeps_its_settings() -> None:
    before = _setting("statement_timeout"), _setting("enable_seqscan")
    with search_cursor(50, enable_seqscan="off") as cursor:
        cursor.execute("SELECT current_setting('enable_seqscan'), %s::int", [7])
        assert cursor.fetchall() == [("off", 7)]
        with pytest.raises(OperationalError, match="statement timeout"):
            cursor.execute("SELECT pg_sleep(2)")
        cursor.execute("SELECT 1")  # the next statement runs: nothing was left aborted
        assert cursor.fetchone() == (1,)
    assert (_setting("statement_timeout"), _setting("enable_seqscan")) == before


@pytest.mark.django_db(transaction=True)
def test_the_binary_cursor_keeps_the_timeout() -> None:
    with search_cursor(50) as cursor, binary_cursor(cursor) as binary:
        binary.execute("SELECT current_setting('statement_timeout')")
        assert binary.fetchone() == ("50ms",)
        with pytest.raises(OperationalError, match="statement timeout"):
            binary.execute("SELECT pg_sleep(2)")


@pytest.mark.django_db(transaction=True)
def test_a_failing_statement_leaves_the_callers_transaction_usable() -> None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("CREATE TEMPORARY TABLE kept (n int) ON COMMIT DROP")
            cursor.execute("INSERT INTO kept VALUES (1)")
        with pytest.raises(OperationalError), search_cursor(50) as cursor:
            cursor.execute("SELECT pg_sleep(2)")
        with connection.cursor() as cursor:
            cursor.execute("SELECT n FROM kept")  # the transaction was not aborted
            assert cursor.fetchall() == [(1,)]
