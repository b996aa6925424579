"""The embedded stack is a server too: passwords for PostgreSQL and Redis, no superuser for the
application, fsync on, and an older cluster (trust for everyone) upgraded in place.

The first tests start the servers alone; the rest run ``python -m reposearch.embedded_stack up``
(what ``make up`` runs) on a data directory made the way reposearch made it before it had
passwords: a trust-auth cluster, fsync off, everything owned by the ``postgres`` superuser,
migrated, with rows in it. They look at the running stack from outside, as a local user would.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from reposearch import embedded_credentials
from reposearch.embedded_credentials import Credentials
from reposearch.embedded_provision import hba_is_weak
from reposearch.embedded_services import EmbeddedPostgres, EmbeddedRedis, free_port
from tests.make_up_stack import ROOT, Stack, make_up, manage, user_environment


def refusal(url: str) -> str:
    """Why PostgreSQL refused ``url`` (the test fails when it let it in)."""
    env_password = os.environ.pop("PGPASSWORD", None)  # libpq would use it
    try:
        with psycopg.connect(url, connect_timeout=5):
            pass
    except psycopg.OperationalError as error:
        return str(error)
    finally:
        if env_password is not None:
            os.environ["PGPASSWORD"] = env_password
    raise AssertionError(f"connected without the right password: {url.split('@')[-1]}")


def redis_says(port: int, *commands: str) -> list[str]:
    """Redis's first reply line to each inline command, on one plain connection."""
    replies = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        reader = sock.makefile("rb")
        for command in commands:
            sock.sendall(command.encode() + b"\r\n")
            replies.append(reader.readline().decode().strip())
    return replies


def command_lines() -> str:
    """Every process's command line on this machine, as `ps` shows them to any user."""
    lines = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            lines.append(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return "\n".join(lines)


def secrets_of(creds: Credentials) -> tuple[str, ...]:
    return creds.pg_superuser_password, creds.pg_app_password, creds.redis_password


# --- the servers on their own -------------------------------------------------------------------
def test_a_new_cluster_lets_in_only_the_passwords_it_generated(pg_home: Path) -> None:
    postgres = EmbeddedPostgres(pg_home, free_port())
    postgres.start()
    try:
        creds = embedded_credentials.read(pg_home)
        assert creds is not None
        assert stat.S_IMODE(embedded_credentials.path(pg_home).stat().st_mode) == 0o600
        assert not hba_is_weak((postgres.pgdata / "pg_hba.conf").read_text())
        tcp = f"127.0.0.1:{postgres.port}"
        socket_dir = f"host={postgres.pgdata}&port={postgres.port}"
        for user in ("postgres", "reposearch"):
            assert "no password supplied" in refusal(f"postgresql://{user}@{tcp}/postgres")
            assert "no password supplied" in refusal(f"postgresql://{user}@/postgres?{socket_dir}")
            wrong = f"postgresql://{user}:not-the-password@{tcp}/postgres"
            assert "password authentication failed" in refusal(wrong)
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            assert conn.execute("SHOW fsync").fetchone() == ("on",)
            # pytest-django's test databases: the role may create them, with the extensions.
            conn.execute("CREATE DATABASE made_by_the_app")
        with psycopg.connect(postgres.url("made_by_the_app")) as conn:
            names = {row[0] for row in conn.execute("SELECT extname FROM pg_extension")}
            assert {"vector", "pg_trgm"} <= names
            assert conn.execute("SELECT '[1,2]'::vector <-> '[1,3]'::vector").fetchone() == (1,)

        postgres.stop()  # a second start keeps the passwords
        postgres.start()
        assert embedded_credentials.read(pg_home) == creds
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("reposearch",)
    finally:
        postgres.stop()


def test_lost_passwords_are_replaced_by_new_ones_and_the_old_ones_stop_working(
    pg_home: Path,
) -> None:
    postgres = EmbeddedPostgres(pg_home, free_port())
    postgres.start()
    try:
        old_url = postgres.url()
        with psycopg.connect(old_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (value int)")
            conn.execute("INSERT INTO kept VALUES (7)")
        postgres.stop()
        embedded_credentials.path(pg_home).unlink()
        again = EmbeddedPostgres(pg_home, postgres.port)
        again.start()
        assert again.url() != old_url
        assert "password authentication failed" in refusal(old_url)
        with psycopg.connect(again.url(), autocommit=True) as conn:
            assert conn.execute("SELECT value FROM kept").fetchone() == (7,)
    finally:
        postgres.stop()


def test_the_psql_command_connects_with_the_kept_passwords(pg_home: Path) -> None:
    postgres = EmbeddedPostgres(pg_home, free_port())
    postgres.start()
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PGPASSWORD")}
        env.update(REPO_SEARCH_DATA_DIR=str(pg_home), REPO_SEARCH_PG_PORT=str(postgres.port))
        answers = []
        for args in (["-Atc", "SELECT current_user"], ["--superuser", "-Atc", "SELECT 'su'"]):
            result = subprocess.run(
                [sys.executable, "-m", "reposearch.embedded_stack", "psql", *args],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            answers.append(result.stdout.strip())
        assert answers == ["reposearch", "su"]
    finally:
        postgres.stop()


def test_redis_refuses_commands_without_the_password_which_ps_does_not_show(
    tmp_path: Path,
) -> None:
    redis = EmbeddedRedis(tmp_path, free_port())
    redis.start()
    try:
        noauth, wrong = redis_says(redis.port, "SET stolen 1", "AUTH not-the-password")
        assert noauth.startswith("-NOAUTH"), noauth
        assert wrong.startswith(("-WRONGPASS", "-ERR")), wrong
        assert redis_says(redis.port, f"AUTH {redis.password}", "PING") == ["+OK", "+PONG"]
        assert redis.password not in command_lines()
    finally:
        redis.stop()


# --- make up on a cluster from before the passwords ---------------------------------------------
class OldTrustPostgres(EmbeddedPostgres):
    """A cluster the way reposearch made one before it had passwords."""

    def old_url(self, database: str = "reposearch") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        self.pgdata.mkdir(parents=True)
        self.pgdata.chmod(0o700)
        self._prepare_user()
        initdb = ("initdb", "-D", str(self.pgdata), "--auth=trust", "-U", "postgres", "-E", "UTF8")
        self._run(*initdb)
        options = f"-h 127.0.0.1 -p {self.port} -k {self.pgdata} -c fsync=off"
        log = str(self.pgdata / "server.log")
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", log, "-w", "-o", options, "start")
        with psycopg.connect(self.old_url("postgres"), autocommit=True) as conn:
            conn.execute('CREATE DATABASE "reposearch"')


OLD_ROWS = """
from django.contrib.auth.models import User
from indexing.models import Repository
Repository.objects.create(url="https://example.org/kept/old.git", name="kept/old")
User.objects.create_user("old-admin", password="an-old-password-42")
"""


def credentials(stack: Stack) -> Credentials:
    creds = embedded_credentials.read(stack.data)
    assert creds is not None
    return creds


def app_url(stack: Stack) -> str:
    """The application role's URL with the password the stack keeps."""
    return embedded_credentials.postgres_url(
        "127.0.0.1", stack.pg_port, "reposearch", credentials(stack)
    )


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    # Outside pytest's /tmp/pytest-of-<user> (see the pg_home fixture): module-scoped, so it
    # cannot take that function-scoped fixture.
    tmp = Path(tempfile.mkdtemp(prefix="reposearch-test-upgrade-"))
    try:
        yield from _upgraded_stack(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _upgraded_stack(tmp: Path) -> Iterator[Stack]:
    env = user_environment()
    data = Path(env["REPO_SEARCH_DATA_DIR"])
    old = OldTrustPostgres(data, int(env["REPO_SEARCH_PG_PORT"]))
    old.start()
    try:
        migrate = f"from django.core.management import call_command\ncall_command('migrate', verbosity=0)\n{OLD_ROWS}"
        migrated = manage(
            dict(env, DATABASE_URL=old.old_url()), "shell", "-c", migrate, timeout=300
        )
        assert migrated.returncode == 0, migrated.stderr
    finally:
        old.stop()
    assert not embedded_credentials.path(data).exists()
    # Made before the data directory had to be private: readable by every local user.
    (data / "repos").mkdir(exist_ok=True)
    for folder in (data, data / "repos"):
        folder.chmod(0o755)
    with make_up(tmp, env) as running:
        yield running


def test_the_old_clusters_rows_survive_and_now_belong_to_the_application(
    stack: Stack,
) -> None:
    with psycopg.connect(app_url(stack), autocommit=True) as conn:
        names = conn.execute("SELECT name FROM indexing_repository").fetchall()
        assert names == [("kept/old",)]
        users = conn.execute("SELECT username FROM auth_user").fetchall()
        assert users == [("old-admin",)]
        foreign = conn.execute(
            "SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
            " AND c.relkind IN ('r', 'S', 'v', 'i') AND pg_get_userbyid(c.relowner) <> 'reposearch'"
            " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')"
        ).fetchall()
        # ... but the audit log (its indexes and id sequence with it), which its own role owns
        # (tests/reposearch/test_audit_owner.py).
        assert ("accounts_auditentry", "reposearch_audit") in foreign
        assert {owner for _, owner in foreign} == {"reposearch_audit"}
        assert all(name.startswith("accounts_au") for name, _ in foreign), foreign
        owner = conn.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'reposearch'"
        ).fetchone()
        assert owner == ("reposearch",)
        # The application may still change its tables the old superuser made (a migration will).
        conn.execute("ALTER TABLE indexing_repository ADD COLUMN upgrade_probe int")
        conn.execute("ALTER TABLE indexing_repository DROP COLUMN upgrade_probe")
    assert "object(s) owned by postgres to reposearch" in stack.output()
    with urllib.request.urlopen(f"{stack.base}/api/health", timeout=30) as response:
        assert response.status == 200


def test_postgres_refuses_connections_without_the_password(stack: Stack) -> None:
    pgdata = stack.data / "postgres"
    assert not hba_is_weak((pgdata / "pg_hba.conf").read_text())
    for user in ("postgres", "reposearch"):
        tcp = f"postgresql://{user}@127.0.0.1:{stack.pg_port}/reposearch"
        assert "no password supplied" in refusal(tcp)
        local = f"postgresql://{user}@/reposearch?host={pgdata}&port={stack.pg_port}"
        assert "no password supplied" in refusal(local)


def test_the_application_role_is_no_superuser_and_cannot_run_programs(
    stack: Stack,
) -> None:
    with psycopg.connect(app_url(stack), autocommit=True) as conn:
        role = conn.execute(
            "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles"
            " WHERE rolname = current_user"
        ).fetchone()
        assert role == ("reposearch", False, False, True)
        conn.execute("CREATE TEMP TABLE shell (line text)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="external program"):
            conn.execute("COPY shell FROM PROGRAM 'id'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT pg_read_file('/etc/passwd')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("ALTER ROLE reposearch SUPERUSER")


def test_fsync_is_on(stack: Stack) -> None:
    with psycopg.connect(app_url(stack), autocommit=True) as conn:
        assert conn.execute("SHOW fsync").fetchone() == ("on",)
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)


def test_redis_answers_noauth_to_a_client_without_the_password(stack: Stack) -> None:
    [reply] = redis_says(stack.redis_port, "KEYS *")
    assert reply.startswith("-NOAUTH"), reply
    password = credentials(stack).redis_password
    assert redis_says(stack.redis_port, f"AUTH {password}", "PING") == ["+OK", "+PONG"]


def test_the_passwords_are_private_and_appear_in_no_output_and_no_command_line(
    stack: Stack,
) -> None:
    path = embedded_credentials.path(stack.data)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    output, commands = stack.output(), command_lines()
    assert str(path) in output
    for secret in secrets_of(credentials(stack)):
        assert secret not in output
        assert secret not in commands
    server_log = (stack.data / "postgres" / "server.log").read_text(errors="replace")
    for secret in secrets_of(credentials(stack)):
        assert secret not in server_log


def test_an_older_data_directory_readable_by_anyone_is_made_private(stack: Stack) -> None:
    assert stat.S_IMODE(stack.data.stat().st_mode) & 0o067 == 0  # as root: group passes through
    assert stat.S_IMODE((stack.data / "repos").stat().st_mode) == 0o700
    assert stat.S_IMODE((stack.data / "secret-key").stat().st_mode) == 0o600
