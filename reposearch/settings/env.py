"""The one place that reads the environment.

Every setting reposearch takes from the environment is read and validated here. An invalid
value raises ``ConfigError`` whose message is one line naming the variable and what is wrong;
``manage.py``, the WSGI/ASGI entry points and the Celery app turn it into a one-line exit.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from reposearch import data_folder, embedded_credentials

PROVIDERS_CHAT = ("ollama", "openai", "none")
PROVIDERS_EMBEDDING = ("local", "ollama", "openai")
LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
LOCAL_EMBEDDING_DIM = 384
# Ports of the embedded servers ``make up`` starts; DATABASE_URL / REDIS_URL default to them.
DEFAULT_PG_PORT = 54329
DEFAULT_REDIS_PORT = 63799
# A source checkout (manage.py beside the packages) keeps its data in <checkout>/data whatever
# the working directory, so `manage.py mcp` started by an editor finds the clones `make up` made.
CHECKOUT_DIR = Path(__file__).resolve().parents[2]

# Public (it is in this file): development only; production settings refuse it.
DEVELOPMENT_SECRET_KEY = "dev-only-insecure-secret-key-change-me"  # noqa: S105

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ImproperlyConfigured):
    """A setting in the environment is invalid; the message names the variable."""


@dataclass(frozen=True)
class EnvReader:
    """Typed, validated access to an environment mapping."""

    environ: Mapping[str, str]

    def raw(self, name: str) -> str | None:
        value = self.environ.get(name)
        if value is None:
            return None
        value = value.strip()
        return value or None

    def text(self, name: str, default: str) -> str:
        value = self.raw(name)
        return default if value is None else value

    def optional(self, name: str) -> str | None:
        return self.raw(name)

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        lowered = value.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ConfigError(
            f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)"
        )

    def positive_int(self, name: str, default: int) -> int:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} is not a positive integer") from None
        if number <= 0:
            raise ConfigError(f"{name}={value!r} is not a positive integer")
        return number

    def non_negative_int(self, name: str, default: int) -> int:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} is not a whole number of 0 or more") from None
        if number < 0:
            raise ConfigError(f"{name}={value!r} is not a whole number of 0 or more")
        return number

    def positive_int_list(self, name: str, default: str) -> list[int]:
        value = self.text(name, default)
        try:
            numbers = [int(item) for item in value.split(",") if item.strip()]
        except ValueError:
            numbers = []
        if not numbers or any(number <= 0 for number in numbers):
            raise ConfigError(
                f"{name}={value!r} is not a comma-separated list of positive integers"
            )
        return numbers

    def positive_float(self, name: str, default: float) -> float:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r} is not a positive number") from None
        if not number > 0 or number == float("inf"):
            raise ConfigError(f"{name}={value!r} is not a positive number")
        return number

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.text(name, default).lower()
        if value not in choices:
            raise ConfigError(f"{name}={value!r} is not one of: {', '.join(choices)}")
        return value

    def log_level(self, name: str, default: str) -> str:
        """A level name Python's logging knows, in any case (``debug``, ``INFO``), as logging
        spells it; ``dictConfig`` would otherwise end start-up with a traceback."""
        value = self.text(name, default)
        levels = logging.getLevelNamesMapping()
        if value.upper() not in levels:
            raise ConfigError(
                f"{name}={value!r} is not a log level (one of: {', '.join(levels)}; any case)"
            )
        return value.upper()

    def url(self, name: str, default: str, schemes: tuple[str, ...]) -> str:
        value = self.text(name, default)
        parts = urlsplit(value)
        if parts.scheme not in schemes or not parts.netloc:
            raise ConfigError(
                f"{name}={_redact(value)!r} is not a valid URL (expected {'/'.join(schemes)}://host...)"
            )
        try:
            parts.port  # noqa: B018 - raises ValueError on a malformed port
        except ValueError:
            raise ConfigError(f"{name}={_redact(value)!r} has an invalid port") from None
        return value

    def port(self, name: str, default: int) -> int:
        value = self.raw(name)
        if value is None:
            return default
        if not value.isdigit() or not 0 < int(value) < 65536:
            raise ConfigError(f"{name}={value!r} is not a TCP port (1-65535)")
        return int(value)

    def bind_addr(self, name: str, default: str) -> tuple[str, int]:
        value = self.text(name, default)
        host, sep, port_text = value.rpartition(":")
        if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ConfigError(f"{name}={value!r} is not host:port (e.g. 127.0.0.1:9000)")
        return host.strip("[]"), int(port_text)

    def csv(self, name: str, default: str) -> list[str]:
        return [item.strip() for item in self.text(name, default).split(",") if item.strip()]


def _redact(url: str) -> str:
    """Hide a password in a URL so it never reaches an error message."""
    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@")
    return url


IDLE_IN_TRANSACTION_MS = 300_000


def database_config(url: str, pool_size: int = 0) -> dict[str, object]:
    """Turn ``postgresql://user:pass@host:port/name?host=/socket/dir`` into Django's DATABASES entry.

    With ``pool_size`` > 0 each process keeps a psycopg pool of up to that many connections
    (Django's ``OPTIONS["pool"]``): a thread takes one for a request or a retrieval list and
    gives it back, and a burst of clients waits up to ``timeout`` seconds for a free one instead
    of opening connections until the server refuses more. 0: a connection per thread, kept
    for ``CONN_MAX_AGE``.
    """
    parts = urlsplit(url)
    query = dict(item.split("=", 1) for item in parts.query.split("&") if "=" in item)
    host = parts.hostname or query.get("host", "")
    config = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": (parts.path or "/").lstrip("/") or "reposearch",
        "USER": parts.username or "postgres",
        "PASSWORD": parts.password or "",
        "HOST": query.get("host", host),
        "PORT": str(parts.port or ""),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            "connect_timeout": 5,
            # A worker host cut off mid-transaction would hold its row locks until TCP gives up
            # (about 15 min), blocking the host that resumed its job: the server ends a session
            # idle inside a transaction after 5 min, and keepalives notice a dead link sooner.
            "options": f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}",
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 10,
            "keepalives_count": 3,
        },
    }
    if pool_size > 0:
        config["CONN_MAX_AGE"] = 0  # pooled connections go back to the pool, not away
        options = config["OPTIONS"]
        assert isinstance(options, dict)
        options["pool"] = {
            "min_size": 1,
            "max_size": pool_size,
            "timeout": 10,  # seconds a thread waits for a free connection
            "max_idle": 300,
        }
    return config


def replica_configs(env: EnvReader) -> dict[str, dict[str, object]]:
    """``REPO_SEARCH_READ_REPLICAS`` (comma-separated ``postgresql://`` URLs of streaming
    replicas of ``DATABASE_URL``'s server) as DATABASES entries ``replica1``, ``replica2``...

    A replica gets no pool and short timeouts: a pool keeps retrying a replica that is down while
    a search waits for it; a search instead tries the next database at once
    (search/retrieval/replicas.py). Tests never create a database of their own for one."""
    configs: dict[str, dict[str, object]] = {}
    for number, url in enumerate(env.csv("REPO_SEARCH_READ_REPLICAS", ""), start=1):
        if urlsplit(url).scheme not in ("postgres", "postgresql"):
            raise ConfigError(
                f"REPO_SEARCH_READ_REPLICAS: {_redact(url)!r} is not a postgresql:// URL"
            )
        config = database_config(url)
        options = config["OPTIONS"]
        assert isinstance(options, dict)
        options["connect_timeout"] = 2
        # A replica cut off mid-statement fails the statement within seconds (data unacknowledged
        # for 5 s; an idle connection probed after 5 s), and the search goes elsewhere.
        options.update(tcp_user_timeout=5000, keepalives_idle=5, keepalives_interval=2)
        config["TEST"] = {"MIRROR": "default"}
        configs[f"replica{number}"] = config
    return configs


def data_dir(env: EnvReader) -> Path:
    value = env.raw("REPO_SEARCH_DATA_DIR")
    if value is None:
        in_checkout = (CHECKOUT_DIR / "manage.py").is_file()
        return CHECKOUT_DIR / "data" if in_checkout else Path("data").resolve()
    return Path(value).expanduser().resolve()


def secret_key(env: EnvReader, root: Path) -> str:
    """``SECRET_KEY``; by default the random one ``make up`` keeps in the data directory
    (``data_folder``), else the public development key (which production settings refuse)."""
    if env.raw("SECRET_KEY") is not None:
        return env.text("SECRET_KEY", "")
    return data_folder.read_secret_key(root) or DEVELOPMENT_SECRET_KEY


def allowed_hosts(env: EnvReader, bind_host: str) -> list[str]:
    """``ALLOWED_HOSTS``; by default the loopback names plus the address ``make up`` binds
    (and this machine's names when it binds every interface)."""
    if env.raw("ALLOWED_HOSTS") is not None:
        return env.csv("ALLOWED_HOSTS", "")
    hosts = ["localhost", "127.0.0.1", "[::1]"]
    if bind_host in ("0.0.0.0", "::", ""):  # noqa: S104 - recognising it, not binding
        import socket

        hosts += [socket.gethostname(), socket.getfqdn()]
    else:
        hosts.append(f"[{bind_host}]" if ":" in bind_host else bind_host)
    return list(dict.fromkeys(host for host in hosts if host))


def database_url(env: EnvReader) -> str:
    """``DATABASE_URL``, by default the embedded PostgreSQL on ``REPO_SEARCH_PG_PORT`` as the
    application role, with the password ``make up`` keeps in the data directory."""
    port = env.port("REPO_SEARCH_PG_PORT", DEFAULT_PG_PORT)
    if env.raw("DATABASE_URL") is not None:
        return env.url("DATABASE_URL", "", ("postgres", "postgresql"))
    creds = embedded_credentials.read(data_dir(env))
    default = embedded_credentials.postgres_url("127.0.0.1", port, "reposearch", creds)
    return env.url("DATABASE_URL", default, ("postgres", "postgresql"))


def redis_url(env: EnvReader) -> str:
    """``REDIS_URL``, by default the embedded Redis on ``REPO_SEARCH_REDIS_PORT``, with the
    password ``make up`` keeps in the data directory."""
    port = env.port("REPO_SEARCH_REDIS_PORT", DEFAULT_REDIS_PORT)
    if env.raw("REDIS_URL") is not None:
        return env.url("REDIS_URL", "", ("redis", "rediss", "unix"))
    creds = embedded_credentials.read(data_dir(env))
    default = embedded_credentials.redis_url("127.0.0.1", port, creds)
    return env.url("REDIS_URL", default, ("redis", "rediss", "unix"))


def missing_credentials(env: EnvReader, url_variable: str) -> Path | None:
    """The ``credentials.env`` looked for in vain: ``url_variable`` (``DATABASE_URL`` /
    ``REDIS_URL``) is unset, so its default needs ``make up``'s passwords, and the data
    directory holds none. None when the URL is set or the passwords are there."""
    if env.raw(url_variable) is not None:
        return None
    root = data_dir(env)
    if embedded_credentials.read(root) is not None:
        return None
    return embedded_credentials.path(root)


def redact_url(url: str) -> str:
    """``url`` with its password hidden, for messages."""
    return _redact(url)


def reader(environ: Mapping[str, str] | None = None) -> EnvReader:
    return EnvReader(os.environ if environ is None else environ)
