"""An audit log the application cannot erase (issue 33 item 6).

``make up`` hands the audit table (and its append-only trigger's function, and the ``public``
schema) to ``reposearch_audit`` after its migrations. Connected as the application's role, with
the password the stack keeps -- what anyone with the application's database credentials has --
every way of erasing or silencing the log is refused, while the application still writes its
audit rows, reads them, and creates and changes its own tables. The stack's migrations get the
table back for as long as they run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from reposearch import audit_owner, embedded_credentials
from reposearch.embedded_services import EmbeddedPostgres
from tests.make_up_stack import ROOT, Stack, make_up, user_environment

ERASERS = [
    "TRUNCATE accounts_auditentry",
    "DELETE FROM accounts_auditentry",
    "UPDATE accounts_auditentry SET action = 'nothing happened'",
    "ALTER TABLE accounts_auditentry DISABLE TRIGGER accounts_auditentry_append_only",
    "ALTER TABLE accounts_auditentry DISABLE TRIGGER ALL",
    "DROP TRIGGER accounts_auditentry_append_only ON accounts_auditentry",
    "DROP TABLE accounts_auditentry",
    "ALTER TABLE accounts_auditentry RENAME TO old_audit",
    "ALTER TABLE accounts_auditentry OWNER TO reposearch",
    "CREATE OR REPLACE FUNCTION accounts_audit_append_only() RETURNS trigger"
    " AS $$ BEGIN RETURN OLD; END; $$ LANGUAGE plpgsql",
    "ALTER SCHEMA public OWNER TO reposearch",
    # The id sequence is readable (pg_dump reads it), not movable: a rewound sequence would make
    # every later insert collide with a kept row.
    "SELECT setval('accounts_auditentry_id_seq', 1)",
    "ALTER SEQUENCE accounts_auditentry_id_seq RESTART",
]


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    tmp = Path(tempfile.mkdtemp(prefix="reposearch-test-audit-owner-"))
    try:
        with make_up(tmp, user_environment()) as running:
            yield running
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def app_connection(stack: Stack) -> psycopg.Connection:
    creds = embedded_credentials.read(stack.data)
    assert creds is not None
    url = embedded_credentials.postgres_url("127.0.0.1", stack.pg_port, "reposearch", creds)
    return psycopg.connect(url, autocommit=True)


def audit_rows(conn: psycopg.Connection) -> list[tuple[int, str]]:
    return conn.execute("SELECT id, action FROM accounts_auditentry ORDER BY id").fetchall()


@pytest.mark.parametrize("statement", ERASERS)
def test_the_application_role_cannot_erase_or_silence_the_audit_log(
    stack: Stack, statement: str
) -> None:
    stack.api("POST", "/api/tokens", {"name": f"before {statement[:20]}", "scope": "read"})
    with app_connection(stack) as conn:
        before = audit_rows(conn)
        assert before, "the write above left no audit row"
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement)
        assert audit_rows(conn) == before
        assert conn.execute("SELECT current_user").fetchone() == ("reposearch",)


def test_the_application_still_writes_and_reads_its_audit_rows_and_owns_its_tables(
    stack: Stack,
) -> None:
    with app_connection(stack) as conn:
        assert audit_owner.sealed(conn)
        before = len(audit_rows(conn))
    created = stack.api("POST", "/api/tokens", {"name": "audited", "scope": "read"})
    with app_connection(stack) as conn:
        rows = audit_rows(conn)
        assert len(rows) == before + 1
        assert rows[-1][1] == "token.create"
        # What later migrations do to the application's own tables still works.
        conn.execute("CREATE TABLE migration_probe (value int)")
        conn.execute("ALTER TABLE indexing_repository ADD COLUMN migration_probe int")
        conn.execute("ALTER TABLE indexing_repository DROP COLUMN migration_probe")
        conn.execute("DROP TABLE migration_probe")
    # And the API reads the log back to an admin.
    listed = stack.api("GET", "/api/audit")
    assert any(e["action"] == "token.create" for e in listed["results"])
    assert created["name"] == "audited"


def test_the_stacks_migrations_get_the_table_back_while_they_run(stack: Stack) -> None:
    postgres = EmbeddedPostgres(stack.data, stack.pg_port)
    with postgres.audit_log_open(), app_connection(stack) as conn:
        assert not audit_owner.sealed(conn)
        conn.execute("ALTER TABLE accounts_auditentry ADD COLUMN migration_probe int")
        conn.execute("ALTER TABLE accounts_auditentry DROP COLUMN migration_probe")
    with app_connection(stack) as conn:
        assert audit_owner.sealed(conn)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("ALTER TABLE accounts_auditentry ADD COLUMN migration_probe int")
    assert "the audit log belongs to reposearch_audit" in stack.output()


def test_an_operator_hands_the_table_back_and_over_again_with_the_documented_command(
    stack: Stack,
) -> None:
    creds = embedded_credentials.read(stack.data)
    assert creds is not None
    password = creds.pg_superuser_password
    superuser = f"postgresql://postgres:{password}@127.0.0.1:{stack.pg_port}/reposearch"
    said = []
    for action in ("unseal", "seal"):
        done = subprocess.run(
            [sys.executable, "-m", "reposearch.audit_owner", action, superuser],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        said.append(done.stdout.strip())
        with app_connection(stack) as conn:
            assert audit_owner.sealed(conn) is (action == "seal")
    assert said == [
        "accounts_auditentry now belongs to reposearch",
        "accounts_auditentry now belongs to reposearch_audit",
    ]
