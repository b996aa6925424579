"""The embedded servers' passwords: generated on first start, kept in ``<data>/credentials.env``.

The file (mode 0600, shell syntax) holds the PostgreSQL superuser's password, the application
role's and Redis's. ``make up`` writes it the first time it starts a server on a data directory
and reuses it afterwards; the settings read it so that ``DATABASE_URL`` / ``REDIS_URL`` default
to the embedded servers with their passwords. This module imports nothing from reposearch (the
settings and the benchmarks' launcher load it before Django is set up).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

FILENAME = "credentials.env"
SUPERUSER = "postgres"
APP_ROLE = "reposearch"
APP_DATABASE = "reposearch"
KEYS = ("PG_SUPERUSER_PASSWORD", "PG_APP_PASSWORD", "REDIS_PASSWORD")
HEADER = """\
# Passwords of reposearch's embedded PostgreSQL and Redis, generated on their first start and
# reused by every later one. Keep this file private (mode 0600). The application connects as
# PG_APP_USER (owner of the reposearch database only); PG_SUPERUSER is for maintenance.
# psql: python -m reposearch.embedded_stack psql   (or: PGPASSWORD=... psql -h 127.0.0.1 ...)
"""


@dataclass(frozen=True)
class Credentials:
    pg_superuser_password: str
    pg_app_password: str
    redis_password: str

    def text(self) -> str:
        return (
            f"{HEADER}PG_SUPERUSER={SUPERUSER}\n"
            f"PG_SUPERUSER_PASSWORD={self.pg_superuser_password}\n"
            f"PG_APP_USER={APP_ROLE}\n"
            f"PG_APP_PASSWORD={self.pg_app_password}\n"
            f"REDIS_PASSWORD={self.redis_password}\n"
        )


def path(root: Path) -> Path:
    return Path(root) / FILENAME


def read(root: Path) -> Credentials | None:
    """The credentials kept in ``root``; None when there are none (or they cannot be read)."""
    try:
        lines = path(root).read_text().splitlines()
    except OSError:
        return None
    values = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    if not all(values.get(key) for key in KEYS):
        return None
    return Credentials(*(values[key].strip() for key in KEYS))


def ensure(root: Path) -> tuple[Credentials, bool]:
    """The credentials in ``root``, generated now when there are none; True when generated."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    return keep_once(
        path(root),
        lambda: read(root),
        lambda: Credentials(*(secrets.token_urlsafe(24) for _ in KEYS)),
        Credentials.text,
    )


def scram_verifier(password: str, iterations: int = 4096) -> str:
    """PostgreSQL's stored form of a SCRAM-SHA-256 password, so the password itself never
    reaches the server (nor its log). ``password`` is ASCII, so SASLprep leaves it unchanged."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def postgres_url(host: str, port: int, database: str, creds: Credentials | None) -> str:
    """The application role's URL; without credentials, the same URL without a password."""
    password = f":{creds.pg_app_password}" if creds is not None else ""
    return f"postgresql://{APP_ROLE}{password}@{host}:{port}/{database}"


def redis_url(host: str, port: int, creds: Credentials | None) -> str:
    password = f":{creds.redis_password}@" if creds is not None else ""
    return f"redis://{password}{host}:{port}/0"


# Both of make up's generated secrets (these passwords and Django's key, reposearch.data_folder)
# are written by keep_once. It lives here because this module is loaded without the package
# (bench/bench_db.py), so it imports nothing of reposearch.
T = TypeVar("T")


def keep_once(
    path: Path, read: Callable[[], T | None], make: Callable[[], T], text: Callable[[T], str]
) -> tuple[T, bool]:
    """What ``read()`` finds in ``path``, else a new ``make()`` written there (mode 0600) as
    ``text(value)``; True when this call wrote it. An unreadable or incomplete file is replaced,
    never merged; a file made readable to others is tightened back to 0600."""
    existing = read()
    if existing is not None:
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(0o600)  # someone loosened it: the secret is for this user only
        return existing, False
    fresh = make()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text(fresh))
        out.flush()
        os.fsync(out.fileno())
    try:
        if path.exists():  # unreadable or incomplete: replaced
            os.replace(temporary, path)
        else:
            os.link(temporary, path)  # fails when another process just wrote one
            temporary.unlink()
    except FileExistsError:
        temporary.unlink()
        winner = read()
        if winner is None:
            raise
        return winner, False
    return fresh, True
