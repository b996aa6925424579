"""Test settings: real PostgreSQL and Redis (started by ``make test``), quick password hashing."""

from __future__ import annotations

from .base import *  # noqa: F403
from .base import env

# No connection outlives its use: the test database can be dropped at the end of the session
# even though search threads (search/retrieval/db.py) have their own connections.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
# No pool either (its idle connections would hold the test database), unless a test's own
# server process asks for one (the HTTP concurrency benchmark's smoke run).
if env.raw("REPO_SEARCH_DB_POOL_SIZE") is None:
    DATABASES["default"]["OPTIONS"].pop("pool", None)  # type: ignore[attr-defined]  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The cross-encoder adds about 0.3 s to every prose search on these cores: the ranking tests
# state what they expect of the fusion, and the cross-encoder's own tests ask for it
# (tests/search/test_cross_encoder.py), as does the end-to-end stack (base settings).
REPO_SEARCH_CROSS_ENCODER = env.flag("REPO_SEARCH_CROSS_ENCODER", False)
# A test process that serves the site loads a model when one of its tests needs it, not beside
# tests that watch when models are loaded and freed (tests/reposearch/test_warm_up.py asks).
REPO_SEARCH_LOAD_MODELS_AT_START = env.flag("REPO_SEARCH_LOAD_MODELS_AT_START", False)
REPO_SEARCH_ALLOW_LOCAL_PATHS = True
# Per-process counters; budgets out of the way except in the tests that lower them.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
REPO_SEARCH_THROTTLE_SEARCH = REPO_SEARCH_THROTTLE_ASK = "100000/min"
REPO_SEARCH_THROTTLE_WRITES = "100000/min"
REPO_SEARCH_ALLOW_PRIVATE_HOSTS = True
STATIC_ROOT = None  # type: ignore[assignment]  # whitenoise serves nothing in tests; avoids a missing-directory warning

if not env.raw("REPO_SEARCH_DATA_DIR"):
    # Tests never touch the developer's ./data; the worker process is given this same path.
    # The process that made it removes it when it exits (not a forked child of it).
    import atexit
    import os
    import shutil
    import tempfile
    from pathlib import Path

    REPO_SEARCH_DATA_DIR = Path(tempfile.mkdtemp(prefix="reposearch-test-data-"))
    _MADE_BY = os.getpid()

    def _remove_test_data_dir(path: Path = REPO_SEARCH_DATA_DIR) -> None:
        if os.getpid() == _MADE_BY:
            shutil.rmtree(path, ignore_errors=True)

    atexit.register(_remove_test_data_dir)
