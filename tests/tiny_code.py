"""Small code bases the evaluation tests index: a retry helper and a settings module (what the
tests' labelled questions ask about), shared by ``tests/search`` and ``tests/bench``."""

from __future__ import annotations

RETRY = '''"""Retrying flaky calls."""

import time


def retry_with_backoff(call, attempts=5, base_delay=0.1):
    """Call ``call`` until it succeeds, sleeping longer after each failure."""
    for attempt in range(attempts):
        try:
            return call()
        except ConnectionError:
            time.sleep(base_delay * 2**attempt)
    return call()
'''

SETTINGS = '''"""Application settings."""

import os


class Settings:
    """Values read once at start-up."""

    def __init__(self, database_url, pool_size):
        self.database_url = database_url
        self.pool_size = pool_size


def load_settings_from_environment():
    """Read the database URL and the connection pool size from environment variables."""
    return Settings(os.environ["DATABASE_URL"], int(os.environ.get("POOL_SIZE", "5")))
'''

_TEST_RETRY = """from PACKAGE.retry import retry_with_backoff


def test_retry_with_backoff_gives_up():
    calls = []
    retry_with_backoff(lambda: calls.append(1), attempts=2)
    assert calls
"""


def retry_test_source(package: str) -> str:
    """A test module of the retry helper, importing it from ``package``."""
    return _TEST_RETRY.replace("PACKAGE", package)
