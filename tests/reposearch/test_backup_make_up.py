"""docs/operators/backups.md's ``make up`` section, run as written, as the application's role.

A running ``make up`` has handed its audit log to ``reposearch_audit``
(tests/reposearch/test_audit_owner.py). The page's backup commands, run with ``bash`` against
that stack (its port, its data directory), must dump the whole database, audit log included;
its restore commands must bring that dump back into the same running stack; the next start
serves the restored rows and hands the restored audit log to its own role again.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from reposearch import audit_owner, embedded_credentials
from reposearch.embedded_services import EmbeddedPostgres
from tests.make_up_stack import ROOT, Stack, make_up, user_environment

PAGE = ROOT / "docs" / "operators" / "backups.md"


def make_up_blocks() -> tuple[str, str]:
    """The backup and the restore shell blocks of the page's ``make up`` section."""
    section = PAGE.read_text().split("## `make up`", 1)[1].split("\n## ", 1)[0]
    backup, restore = re.findall(r"```sh\n(.*?)```", section, re.S)
    return backup, restore


def for_stack(script: str, stack: Stack) -> str:
    """A block of the page as the operator of ``stack`` runs it: its port, its data directory,
    this checkout's Python."""
    return (
        script.replace("-p 54329", f"-p {stack.pg_port}")
        .replace("data/credentials.env", str(stack.data / "credentials.env"))
        .replace(".venv/bin/python", sys.executable)
    )


def shell(script: str, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=folder, capture_output=True, text=True, timeout=300
    )


def app_connection(stack: Stack) -> psycopg.Connection:
    creds = embedded_credentials.read(stack.data)
    assert creds is not None
    url = embedded_credentials.postgres_url("127.0.0.1", stack.pg_port, "reposearch", creds)
    return psycopg.connect(url, autocommit=True)


def token_names(stack: Stack) -> set[str]:
    return {token["name"] for token in stack.api("GET", "/api/tokens")["results"]}


def audited_token_names(stack: Stack) -> set[str]:
    entries = stack.api("GET", "/api/audit?action=token.create&limit=200")["results"]
    return {entry["details"].get("name") for entry in entries}


def test_the_pages_backup_and_restore_work_as_the_application_role(tmp_path: Path) -> None:
    backup, restore = make_up_blocks()
    # The same variables (PGBIN, PGPASSWORD) for the restore, as the page says.
    variables = "\n".join(
        line for line in backup.splitlines() if line.startswith(("PGBIN=", "export "))
    )
    env = user_environment()
    # A data directory of the test's own: make_up removes user_environment's when it stops,
    # and this one must outlive the first start.
    data = Path(tempfile.mkdtemp(prefix="reposearch-test-backup-"))
    env["REPO_SEARCH_DATA_DIR"] = str(data)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    dump = tmp_path / "reposearch.dump"
    try:
        with make_up(first, env) as stack:
            with app_connection(stack) as conn:
                assert audit_owner.sealed(conn)
            stack.api("POST", "/api/tokens", {"name": "before the backup", "scope": "read"})

            dumped = shell(for_stack(backup, stack), tmp_path)
            assert dumped.returncode == 0, dumped.stderr
            assert dump.stat().st_size > 0
            contents = subprocess.run(
                [str(EmbeddedPostgres(data, stack.pg_port).bin / "pg_restore"), "--list", dump],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            assert "TABLE DATA public accounts_auditentry" in contents
            assert "SEQUENCE SET public accounts_auditentry_id_seq" in contents

            stack.api("POST", "/api/tokens", {"name": "after the backup", "scope": "read"})
            restored = shell(for_stack(variables + "\n" + restore, stack), tmp_path)
            assert restored.returncode == 0, restored.stderr
            assert token_names(stack) >= {"before the backup"}
            assert "after the backup" not in token_names(stack)

        with make_up(second, env) as stack:
            names = audited_token_names(stack)
            assert "before the backup" in names
            assert "after the backup" not in names
            with app_connection(stack) as conn:
                assert audit_owner.sealed(conn)
                # Sealed again: the restored log is as append-only as the original.
                before = conn.execute("SELECT count(*) FROM accounts_auditentry").fetchone()
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute("DELETE FROM accounts_auditentry")
                after = conn.execute("SELECT count(*) FROM accounts_auditentry").fetchone()
                assert before == after
            assert "the audit log belongs to reposearch_audit" in stack.output()
    finally:
        shutil.rmtree(data, ignore_errors=True)
