"""The one place that reads the environment.

Every setting reposearch takes from the environment is read and validated here. An invalid
value raises ``ConfigError`` whose message is one line naming the variable and what is wrong;
``manage.py``, the WSGI/ASGI entry points and the Celery app turn it into a one-line exit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

PROVIDERS_CHAT = ("ollama", "openai", "none")
PROVIDERS_EMBEDDING = ("local", "ollama", "openai")
LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
LOCAL_EMBEDDING_DIM = 384

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


def database_config(url: str) -> dict[str, object]:
    """Turn ``postgresql://user:pass@host:port/name?host=/socket/dir`` into Django's DATABASES entry."""
    parts = urlsplit(url)
    query = dict(item.split("=", 1) for item in parts.query.split("&") if "=" in item)
    host = parts.hostname or query.get("host", "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": (parts.path or "/").lstrip("/") or "reposearch",
        "USER": parts.username or "postgres",
        "PASSWORD": parts.password or "",
        "HOST": query.get("host", host),
        "PORT": str(parts.port or ""),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {"connect_timeout": 5},
    }


def data_dir(env: EnvReader) -> Path:
    return Path(env.text("REPO_SEARCH_DATA_DIR", "./data")).expanduser().resolve()


def reader(environ: Mapping[str, str] | None = None) -> EnvReader:
    return EnvReader(os.environ if environ is None else environ)
