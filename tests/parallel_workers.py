"""What each pytest-xdist worker needs of its own on the servers ``make test`` shares.

pytest-django gives every worker a test database of its own (``test_<name>_gw0``, ...). Redis is
shared: every worker's Celery worker (``celery_worker_process``) would take the others' tasks
(and run them against the wrong database), and repository locks keyed by row id would collide.
So each xdist worker uses a Redis database of its own (gw0 → 1, gw1 → 2, ...; 0 stays the
serial run's and 13 a benchmark's, tests/bench). The settings are read before any conftest.py
is imported, so they are changed as well as the environment (which the worker's children get).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

SPARE_REDIS_DATABASE = 13  # tests/bench/test_bench_smoke.py's spare_redis


def worker_redis_database(worker: str) -> int:
    number = 1 + int(worker.removeprefix("gw"))
    return number + 1 if number >= SPARE_REDIS_DATABASE else number


def use_own_redis_database() -> None:
    """In an xdist worker: ``REDIS_URL``, the settings and the Celery app on its own database."""
    worker, url = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("REDIS_URL")
    if not (worker and url and url.startswith(("redis://", "rediss://"))):
        return
    from django.conf import settings

    from reposearch.celery import app

    own = urlsplit(url)._replace(path=f"/{worker_redis_database(worker)}").geturl()
    os.environ["REDIS_URL"] = own
    settings.REDIS_URL = settings.CELERY_BROKER_URL = own
    app.conf.broker_url = own


# Modules that share a session fixture too costly to make twice, scheduled as one unit of work
# (``--dist loadfile``) so that they run on one worker: each key joins the unit of its value,
# and the unit runs in collection order (here test_make_up.py first).
# tests/reposearch/conftest.py's ``shared_make_up`` is a whole ``make up`` stack (about 20 s of
# both cores), which test_make_up.py looks at and test_make_up_restarts.py then disturbs.
RUN_WITH = {"tests/reposearch/test_make_up_restarts.py": "tests/reposearch/test_make_up.py"}


def make_scheduler(config: Any, log: Any) -> Any:
    """``--dist loadfile``, with each module of ``RUN_WITH`` in the unit of its partner."""
    if config.getoption("dist") != "loadfile":
        return None  # pytest-xdist's own choice
    from xdist.scheduler import LoadFileScheduling

    class ModulesWithPartners(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return RUN_WITH.get(module, module)

    return ModulesWithPartners(config, log)
