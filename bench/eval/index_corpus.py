"""Index the evaluation corpus in-process (fetch, walk/chunk/store, embed): no worker needed.

    .venv/bin/python -m reposearch.embedded_stack run -- sh -c '
        .venv/bin/python manage.py migrate -v0 &&
        .venv/bin/python bench/eval/index_corpus.py &&
        .venv/bin/python manage.py eval --repo flask-3.0.3 \
            --queries bench/eval/flask-queries.json --k 5 --json bench/results/eval-flask.json'

Uses the database and Redis of the environment (DATABASE_URL / REDIS_URL, as manage.py does).
The repository is the local git repository built by ``fetch_corpus.py`` (fetched first when
missing), named ``<package>-<version>``; it is reused when already indexed and embedded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

from fetch_corpus import PINNED, corpus_dir  # noqa: E402


def ensure_repository(package: str = "flask") -> Any:
    """The corpus repository, indexed and embedded (Django must be set up)."""
    from indexing.models import IndexJob, Repository
    from indexing.services import pipeline
    from indexing.services.embedding_stage import run_embed

    path = corpus_dir(package)
    if not (path / ".git").exists():
        subprocess.run([sys.executable, str(ROOT / "bench/eval/fetch_corpus.py")], check=True)
    name = f"{package}-{PINNED[package][0]}"
    repository = Repository.objects.filter(name=name).first()
    if repository is not None and repository.active_generation and repository.embedded_count:
        return repository
    if repository is None:
        repository = Repository.objects.create(url=str(path), name=name, branch="main")
    job = IndexJob.objects.create(repository=repository)
    started = time.monotonic()
    print(f"indexing {path} in-process (job {job.pk}) ...", flush=True)
    if pipeline.run_fetch(job.pk) and pipeline.run_index(job.pk):
        run_embed(job.pk)
    job.refresh_from_db()
    repository.refresh_from_db()
    print(
        f"{name}: {repository.file_count} files, {repository.chunk_count} chunks,"
        f" {repository.embedded_count} embedded, job {job.state} in"
        f" {time.monotonic() - started:.0f} s {job.stage_timings}",
        flush=True,
    )
    if job.error:
        print(f"job error: {job.error}", flush=True)
    return repository


def main() -> int:
    os.environ.setdefault("REPO_SEARCH_ALLOW_LOCAL_PATHS", "1")
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    repository = ensure_repository()
    print(f"repository id {repository.pk}")
    return 0 if repository.active_generation else 1


if __name__ == "__main__":
    raise SystemExit(main())
