"""The commands of reposearch's long-running processes: the web server and the Celery worker.

The one place that spells them out. ``make up`` (``embedded_stack``), the test suite's worker,
the benchmarks and the Dockerfile's default use these functions; ``docker-compose.yml`` is YAML
and cannot import them, so a test checks its commands against ``web_command`` /
``worker_command``. Nothing here imports Django: the settings module imports ``QUEUES``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Queues by resource profile (CONVENTIONS): git = network, index = CPU + database,
# embed = model inference, default = maintenance.
QUEUES: tuple[str, ...] = ("git", "index", "embed", "default")
# docker compose runs one worker service per resource profile, as (name, queues): the service is
# ``worker-<name>``, its Celery node ``<name>@<host>``. A new repository's clone (git) and full
# text (index) never wait behind other repositories' embedding (embed), nor a slow clone
# behind either; ``docker compose up --scale worker-embed=N`` adds embedding capacity alone.
COMPOSE_WORKER_QUEUES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("git", ("git",)),
    ("index", ("index", "default")),
    ("embed", ("embed",)),
)
WEB_APP = "reposearch.asgi:application"
# What an embed worker's pool child may grow to before it is replaced after a task: it keeps the
# model loaded from one slice of embedding to the next (REPO_SEARCH_EMBED_SLICE_SECS; loading it
# takes seconds), where the other workers' children give their memory back after each task.
EMBED_CHILD_MEMORY_MB = 700
EMBED_WORKER_OPTIONS: tuple[str, ...] = (
    "--max-memory-per-child",
    str(EMBED_CHILD_MEMORY_MB * 1024),
)


def default_web_workers(cores: int | None = None) -> int:
    """One uvicorn process per two cores, 1 to 4: each serves Django from a thread pool."""
    cores = cores or os.cpu_count() or 1
    return max(1, min(4, cores // 2))


def web_command(
    host: str,
    port: int,
    workers: int,
    *,
    program: Sequence[str] = ("uvicorn",),
) -> list[str]:
    """uvicorn serving the site and the MCP endpoint; 1 worker runs in-process (no supervisor)."""
    return [
        *program,
        WEB_APP,
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--lifespan",
        "on",
        # Client addresses come from trusted proxies only (accounts/identity/proxies.py); uvicorn
        # would believe X-Forwarded-For from any local process.
        "--no-proxy-headers",
    ]


def worker_command(
    queues: Sequence[str] = QUEUES,
    *,
    concurrency: int | None = None,
    name: str | None = None,
    beat_schedule: str | None = None,
    loglevel: str = "INFO",
    program: Sequence[str] = ("celery",),
    extra: Sequence[str] = (),
) -> list[str]:
    """A Celery worker consuming ``queues``; with ``beat_schedule`` it also runs the scheduler.

    Its concurrency and memory cap per pool child come from the settings
    (``REPO_SEARCH_WORKER_CONCURRENCY``, ``REPO_SEARCH_WORKER_MAX_MEMORY_MB``) unless
    ``concurrency`` is given.
    """
    command = [*program, "-A", "reposearch", "worker", "-Q", ",".join(queues)]
    if concurrency is not None:
        command += ["--concurrency", str(concurrency)]
    if name:
        command += ["-n", name]
    if beat_schedule:
        command += ["-B", "-s", beat_schedule]
    command += ["--loglevel", loglevel, *extra]
    return command


def beat_command(
    schedule: str, *, loglevel: str = "INFO", program: Sequence[str] = ("celery",)
) -> list[str]:
    """The periodic scheduler on its own (``make up`` runs it inside the worker instead)."""
    return [*program, "-A", "reposearch", "beat", "--loglevel", loglevel, "-s", schedule]


def embedded_workers(
    settings: Any, run_dir: Path, *, program: tuple[str, ...]
) -> list[tuple[str, list[str]]]:
    """``make up``'s Celery workers as (name, command): one for the ``git``, ``index`` and
    ``default`` queues (with the periodic scheduler), one for ``embed`` alone, so cloning and
    full text of a new repository never wait behind other repositories' embedding."""
    fast = worker_command(
        ("git", "index", "default"),
        name="work@%h",
        beat_schedule=str(run_dir / "celerybeat-schedule"),
        program=program,
    )
    embed = worker_command(
        ("embed",),
        name="embed@%h",
        concurrency=settings.REPO_SEARCH_EMBED_CONCURRENCY,
        program=program,
        extra=EMBED_WORKER_OPTIONS,
    )
    return [("worker", fast), ("embed-worker", embed)]


# What docker-compose.yml runs (checked by tests/reposearch/test_docker_compose.py; started from
# the image's files by tests/reposearch/test_image_boots.py).
def compose_commands() -> dict[str, list[str]]:
    """Each long-running compose service's command, by service name."""
    commands = {"web": web_command("0.0.0.0", 9000, 2)}  # noqa: S104 - inside a container
    for name, queues in COMPOSE_WORKER_QUEUES:
        extra = EMBED_WORKER_OPTIONS if queues == ("embed",) else ()
        commands[f"worker-{name}"] = worker_command(queues, name=f"{name}@%h", extra=extra)
    commands["beat"] = beat_command("/tmp/celerybeat-schedule")  # noqa: S108 - container tmp
    return commands
