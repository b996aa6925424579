"""The audit log belongs to a role of its own: the application may only add to it and read it.

``accounts_auditentry`` and its append-only trigger's function (migration ``accounts.0002``)
are handed to ``reposearch_audit``, a role nobody logs in as. The application's role keeps
``SELECT`` and ``INSERT`` on the table, and ``SELECT`` (only) on its id sequence, which
``pg_dump`` reads as the application's role (docs/operators/backups.md); an insert takes the
identity column's next id without any privilege on the sequence. It cannot ``TRUNCATE``,
``DELETE`` or ``UPDATE`` rows, rewind the sequence (``setval``) so that inserts collide, disable
or drop the trigger, replace the trigger's function, alter or drop the table. The
``public`` schema goes to the same role too, with ``USAGE`` and ``CREATE`` for the application,
because a schema's owner may drop any table in it; the application still creates and owns
every other table (its migrations need nothing more).

A superuser does this (``seal``), after the migrations. A later migration that changes the
audit table needs the table back for as long as it runs (``unseal``, migrate, ``seal``):
``make up`` does that around its ``migrate`` on every start, before any application process
runs (``EmbeddedPostgres.audit_log_open``). With a PostgreSQL of your own, run it as one of
its superusers::

    python -m reposearch.audit_owner seal postgresql://postgres@db/reposearch
    python -m reposearch.audit_owner unseal postgresql://postgres@db/reposearch  # then migrate

(docs/operators/deploy.md). A release whose migrations touch the audit table says so in its
notes.
"""

from __future__ import annotations

import argparse
import sys

import psycopg
from psycopg import sql

AUDIT_OWNER = "reposearch_audit"
AUDIT_TABLE = "accounts_auditentry"
AUDIT_FUNCTION = "accounts_audit_append_only()"
DEFAULT_APP_ROLE = "reposearch"


def _ready(conn: psycopg.Connection) -> bool:
    """Whether the migrations have made the table (a new database has none yet)."""
    found = conn.execute("SELECT to_regclass(%s)", (f"public.{AUDIT_TABLE}",)).fetchone()
    return found is not None and found[0] is not None


def _sequences(conn: psycopg.Connection) -> list[str]:
    """The audit table's own sequences (its identity column's), quoted; they change owner with
    the table."""
    rows = conn.execute(
        "SELECT d.objid::regclass::text FROM pg_depend d JOIN pg_class s ON s.oid = d.objid"
        " WHERE d.classid = 'pg_class'::regclass AND d.refobjid = to_regclass(%s)"
        " AND d.deptype IN ('a', 'i') AND s.relkind = 'S' ORDER BY 1",
        (f"public.{AUDIT_TABLE}",),
    ).fetchall()
    return [name for (name,) in rows]


def seal(conn: psycopg.Connection, app_role: str = DEFAULT_APP_ROLE) -> bool:
    """Hand the audit table, its trigger's function and the ``public`` schema to
    ``AUDIT_OWNER`` (made if missing); the application keeps ``SELECT, INSERT`` on the table and
    ``SELECT`` on its sequence (for ``pg_dump``). ``conn``: a superuser's, on the application's
    database. False when there is no audit table yet. Running it again (every ``make up``
    start) brings an older sealed database's grants up to date."""
    if not _ready(conn):
        return False
    owner, app = sql.Identifier(AUDIT_OWNER), sql.Identifier(app_role)
    table = sql.Identifier(AUDIT_TABLE)
    with conn.transaction():
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (AUDIT_OWNER,)).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(owner))
        for statement in (
            "ALTER TABLE {table} OWNER TO {owner}",
            "ALTER FUNCTION " + AUDIT_FUNCTION + " OWNER TO {owner}",
            "REVOKE ALL ON {table} FROM {app}",
            "GRANT SELECT, INSERT ON {table} TO {app}",
            "ALTER SCHEMA public OWNER TO {owner}",
            "GRANT USAGE, CREATE ON SCHEMA public TO {app}",
        ):
            conn.execute(sql.SQL(statement).format(table=table, owner=owner, app=app))
        for sequence in _sequences(conn):  # quoted by regclass; no USAGE or UPDATE (setval)
            seq = sql.SQL(sequence)
            conn.execute(sql.SQL("REVOKE ALL ON SEQUENCE {} FROM {}").format(seq, app))
            conn.execute(sql.SQL("GRANT SELECT ON SEQUENCE {} TO {}").format(seq, app))
    return True


def unseal(conn: psycopg.Connection, app_role: str = DEFAULT_APP_ROLE) -> bool:
    """Give the audit table and its trigger's function back to the application's role, for a
    migration that changes them; ``seal`` again afterwards. False when there is no table."""
    if not _ready(conn):
        return False
    app, table = sql.Identifier(app_role), sql.Identifier(AUDIT_TABLE)
    with conn.transaction():
        conn.execute(sql.SQL("ALTER TABLE {} OWNER TO {}").format(table, app))
        conn.execute(sql.SQL("ALTER FUNCTION " + AUDIT_FUNCTION + " OWNER TO {}").format(app))
    return True


def sealed(conn: psycopg.Connection) -> bool:
    """Whether the audit table belongs to ``AUDIT_OWNER``."""
    row = conn.execute(
        "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass(%s)",
        (f"public.{AUDIT_TABLE}",),
    ).fetchone()
    return row is not None and row[0] == AUDIT_OWNER


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reposearch.audit_owner",
        description="Hand the audit log to its own role (seal) or back for a migration (unseal).",
    )
    parser.add_argument("action", choices=("seal", "unseal"))
    parser.add_argument("superuser_url", help="a superuser's URL of the application's database")
    parser.add_argument("--app-role", default=DEFAULT_APP_ROLE, help="the application's role")
    args = parser.parse_args(argv)
    with psycopg.connect(args.superuser_url, autocommit=True) as conn:
        done = (seal if args.action == "seal" else unseal)(conn, args.app_role)
    if not done:
        print(f"no {AUDIT_TABLE} table yet: run the migrations first", file=sys.stderr)
        return 1
    target = AUDIT_OWNER if args.action == "seal" else args.app_role
    print(f"{AUDIT_TABLE} now belongs to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
