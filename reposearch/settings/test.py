"""Test settings: real PostgreSQL and Redis (started by ``make test``), quick password hashing."""

from __future__ import annotations

from .base import *  # noqa: F403
from .base import env

# No connection outlives its use: the test database can be dropped at the end of the session
# even though search threads (search/retrieval/parallel.py) have their own connections.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
REPO_SEARCH_ALLOW_LOCAL_PATHS = True
REPO_SEARCH_ALLOW_PRIVATE_HOSTS = True
STATIC_ROOT = None  # type: ignore[assignment]  # whitenoise serves nothing in tests; avoids a missing-directory warning

if not env.raw("REPO_SEARCH_DATA_DIR"):
    # Tests never touch the developer's ./data; the worker process is given this same path.
    import tempfile
    from pathlib import Path

    REPO_SEARCH_DATA_DIR = Path(tempfile.mkdtemp(prefix="reposearch-test-data-"))
