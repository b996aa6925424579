"""``manage.py`` and the ``reposearch`` console script: Django's commands on reposearch's settings.

Both read the settings ``make up`` reads (``reposearch/settings/env.py``), so with the same
environment (``REPO_SEARCH_PG_PORT``, ``DATABASE_URL``, …) a command reaches the servers
``make up`` started. A command that cannot reach the database or the broker ends with one line
naming the address it tried, not a traceback.

    .venv/bin/reposearch createsuperuser      # the same as: .venv/bin/python manage.py createsuperuser
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(argv if argv is not None else sys.argv)
    except Exception as error:
        message = unreachable_server_message(error)
        if message is None:
            raise
        sys.stderr.write(f"reposearch: {message}\n")
        raise SystemExit(1) from None


def unreachable_server_message(error: BaseException) -> str | None:
    """One line naming the server that could not be reached, or None for any other error."""
    from django.conf import settings
    from django.db import OperationalError as DatabaseError
    from kombu.exceptions import OperationalError as BrokerError
    from redis.exceptions import ConnectionError as RedisConnectionError

    from reposearch.settings.env import redact_url

    if isinstance(error, DatabaseError):
        reason = database_unreachable(settings.DATABASE_URL)
        if reason is None:
            return None  # the server answers: a real database error, keep its traceback
        return (
            f"cannot reach the database at {redact_url(settings.DATABASE_URL)} ({reason}); "
            + what_to_check("DATABASE_URL", "REPO_SEARCH_PG_PORT")
        )
    if isinstance(error, BrokerError | RedisConnectionError):
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return (
            f"cannot reach the broker at {redact_url(settings.REDIS_URL)} ({reason}); "
            + what_to_check("REDIS_URL", "REPO_SEARCH_REDIS_PORT")
        )
    return None


def what_to_check(url_variable: str, port_variable: str) -> str:
    """The hint after an unreachable server: the data directory when the passwords ``make up``
    keeps there are missing (a command run with another ``REPO_SEARCH_DATA_DIR`` connects
    without them), else the port and URL."""
    from reposearch.settings.env import missing_credentials, reader

    missing = missing_credentials(reader(), url_variable)
    if missing is not None:
        return (
            f"no {missing.name} (make up's passwords) in {missing.parent}: REPO_SEARCH_DATA_DIR "
            f"must be the data directory make up uses (and {port_variable} / {url_variable} "
            "the same)"
        )
    return f"is make up running with the same {port_variable} / {url_variable}?"


def database_unreachable(url: str) -> str | None:
    """Why a fresh connection to ``url`` fails (first line of the driver's reason), or None."""
    import psycopg

    from reposearch.settings.env import database_config

    config = database_config(url)
    try:
        with psycopg.connect(
            dbname=str(config["NAME"]),
            user=str(config["USER"]),
            password=str(config["PASSWORD"]),
            host=str(config["HOST"]),
            port=str(config["PORT"]),
            connect_timeout=3,
        ):
            return None
    except psycopg.OperationalError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        reason = lines[0] if lines else "connection failed"
        # psycopg says "connection failed: connection to server at ..., port N failed: <why>"
        return reason.rsplit("failed: ", 1)[-1]
