"""What the embedded PostgreSQL grants: password rules, the application role, its database.

Every connection authenticates with a password (``scram-sha-256``), the local socket too. The
application connects as ``reposearch``, a role that is not a superuser, owns its database and
everything in it, and may create databases (pytest-django makes ``test_*`` ones). The
extensions the migrations create but only a superuser may (pgvector), and those they use, are
created by the stack as superuser in the application's database and in ``template1``, so every
database created later (the tests', a restore's) has them and the migrations' ``CREATE
EXTENSION`` find them there. A cluster made by an earlier reposearch (trust for everyone, the
superuser owning everything) is upgraded in place: its objects are handed to the role.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from psycopg import sql

from reposearch.embedded_credentials import (
    APP_DATABASE,
    APP_ROLE,
    SUPERUSER,
    Credentials,
    scram_verifier,
)

# The extensions the migrations create (indexing 0001: vector; search 0002: pg_trgm).
EXTENSIONS = ("vector", "pg_trgm")
HBA = """\
# Written by reposearch's embedded stack: every connection authenticates with a password
# (scram-sha-256), the local socket too; the passwords are in <data dir>/credentials.env.
# TYPE  DATABASE  USER  ADDRESS        METHOD
local   all       all                  scram-sha-256
host    all       all   127.0.0.1/32   scram-sha-256
host    all       all   ::1/128        scram-sha-256
"""
WEAK_METHODS = {"trust", "password", "md5", "ident", "peer"}


def hba_is_weak(text: str) -> bool:
    """Whether a pg_hba.conf lets anyone in without a SCRAM password."""
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words and words[0] != "include" and WEAK_METHODS & set(words):
            return True
    return False


def set_superuser_password_sql(creds: Credentials) -> str:
    """For single-user mode (no server listening): one line, the password as its verifier."""
    verifier = scram_verifier(creds.pg_superuser_password)
    return f"ALTER ROLE {SUPERUSER} WITH PASSWORD '{verifier}';\n"


def provision(connect: Callable[[str], psycopg.Connection], creds: Credentials) -> list[str]:
    """Make the role, its database, the extensions; hand over what the superuser owns there.

    ``connect(database)`` opens a superuser connection. Returns what was changed, for the log.
    """
    changes: list[str] = []
    verifier = scram_verifier(creds.pg_app_password)
    attributes = sql.SQL(
        "LOGIN NOSUPERUSER NOCREATEROLE CREATEDB NOREPLICATION NOBYPASSRLS PASSWORD {}"
    ).format(sql.Literal(verifier))
    role = sql.Identifier(APP_ROLE)
    database = sql.Identifier(APP_DATABASE)
    with connect("postgres") as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,)).fetchone()
        verb = "ALTER" if exists else "CREATE"
        conn.execute(sql.SQL(verb + " ROLE {} WITH {}").format(role, attributes))
        if not exists:
            changes.append(f"created the role {APP_ROLE}")
        owner = conn.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", (APP_DATABASE,)
        ).fetchone()
        if owner is None:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(database, role))
            changes.append(f"created the database {APP_DATABASE}")
        elif owner[0] != APP_ROLE:
            conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(database, role))
            changes.append(f"gave the database {APP_DATABASE} to {APP_ROLE}")
    for name in ("template1", APP_DATABASE):
        with connect(name) as conn:
            for extension in EXTENSIONS:
                conn.execute(
                    sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension))
                )
            if name == APP_DATABASE:
                moved = hand_over(conn)
                if moved:
                    changes.append(f"handed {moved} object(s) owned by {SUPERUSER} to {APP_ROLE}")
    return changes


def hand_over(conn: psycopg.Connection) -> int:
    """Give the role every object the superuser owns in this database (an older cluster's
    tables, sequences, views, functions, types, schemas), except the extensions' own members.
    ``REASSIGN OWNED BY postgres`` cannot: it owns the system catalogs too."""
    moved = 0
    with conn.transaction():
        for query in HAND_OVER_QUERIES:
            for kind, name in conn.execute(query, {"owner": SUPERUSER}).fetchall():
                if kind not in OWNED_KINDS:
                    raise ValueError(f"unexpected kind of object: {kind}")
                # ``name`` comes quoted from regclass/regprocedure/regtype/quote_ident.
                statement = sql.SQL("ALTER {} {} OWNER TO {}").format(
                    sql.SQL(kind), sql.SQL(name), sql.Identifier(APP_ROLE)
                )
                conn.execute(statement)
                moved += 1
    return moved


OWNED_KINDS = {
    "TABLE", "VIEW", "MATERIALIZED VIEW", "FOREIGN TABLE", "SEQUENCE", "TYPE", "DOMAIN",
    "ROUTINE", "SCHEMA",
}  # fmt: skip
HAND_OVER_QUERIES = (
    # Tables (their indexes, owned sequences and triggers follow), views, composite types;
    # sequences only when no table owns them. Never a member of an extension.
    """SELECT CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
              WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'S' THEN 'SEQUENCE' WHEN 'c' THEN 'TYPE'
              ELSE 'TABLE' END, c.oid::regclass::text
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE c.relowner = %(owner)s::regrole
         AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'
         AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S', 'c')
         AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
             AND d.objid = c.oid AND (d.deptype = 'e'
                 OR (c.relkind = 'S' AND d.deptype IN ('a', 'i'))))""",
    """SELECT 'ROUTINE', p.oid::regprocedure::text
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE p.proowner = %(owner)s::regrole
         AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'
         AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
             AND d.objid = p.oid AND d.deptype = 'e')""",
    """SELECT CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype::text
       FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
       WHERE t.typowner = %(owner)s::regrole AND t.typtype IN ('e', 'd', 'r')
         AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'
         AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_type'::regclass
             AND d.objid = t.oid AND d.deptype = 'e')""",
    """SELECT 'SCHEMA', quote_ident(n.nspname) FROM pg_namespace n
       WHERE n.nspowner = %(owner)s::regrole
         AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'
         AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_namespace'::regclass
             AND d.objid = n.oid AND d.deptype = 'e')""",
)
