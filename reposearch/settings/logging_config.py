"""Django's LOGGING: one console handler, key-value lines; noisy libraries quietened."""

from __future__ import annotations

from typing import Any


def logging_config(level: str) -> dict[str, Any]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "kv": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        },
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "kv"}},
        "root": {"handlers": ["console"], "level": level.upper()},
        "loggers": {
            "django.db.backends": {"level": "WARNING"},
            # The pool retries a database that is down with a warning per try; what a user sees is
            # the one error of the command or request (503 database_unavailable, /api/health).
            "psycopg.pool": {"level": "ERROR"},
        },
    }
