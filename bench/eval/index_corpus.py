"""Index evaluation corpora in-process (fetch, walk/chunk/store, embed): no worker needed.

    .venv/bin/python -m reposearch.embedded_stack run -- sh -c '
        .venv/bin/python manage.py migrate -v0 &&
        .venv/bin/python bench/eval/index_corpus.py --split all &&
        .venv/bin/python bench/eval/run.py --split tune --json bench/results/eval-tune.json'

    .venv/bin/python bench/eval/index_corpus.py                     # flask 3.0.3 (as before)
    .venv/bin/python bench/eval/index_corpus.py --name gorilla-mux-1.8.0
    .venv/bin/python bench/eval/index_corpus.py --split report      # or tune, all

Uses the database and Redis of the environment (DATABASE_URL / REDIS_URL, as manage.py does).
Each corpus of ``bench/eval/corpora.json`` is the local git repository built by
``fetch_corpus.py`` (fetched first when missing), indexed as a repository named like the
corpus; it is reused when already indexed and embedded at the corpus's commit.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

from fetch_corpus import MANIFEST, corpus_tree, ensure_fetched, find_corpus, manifest  # noqa: E402

from bench.eval.harness.corpora import Corpus, ManifestError, select_corpora  # noqa: E402


def _head(path: Path) -> str:
    result = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    )
    return result.stdout.strip()


def index_corpus(corpus: Corpus) -> Any:
    """The corpus's repository, indexed and embedded (Django must be set up)."""
    from indexing.models import IndexJob, Repository
    from indexing.services.stages import fetch_and_index
    from indexing.services.stages.embed import SliceUsedUp, run_embed

    path = corpus_tree(corpus)
    if not (path / ".git").exists():
        ensure_fetched(corpus)
    head = _head(path)
    repository = Repository.objects.filter(name=corpus.name).first()
    if (
        repository is not None
        and repository.active_generation
        and repository.embedded_count >= repository.chunk_count > 0
        and repository.last_indexed_commit == head
    ):
        print(f"{corpus.name}: indexed at {head[:12]}, {repository.chunk_count} chunks (reused)")
        return repository
    if repository is None:
        repository = Repository.objects.create(url=str(path), name=corpus.name, branch="main")
    job = IndexJob.objects.create(repository=repository)
    started = time.monotonic()
    print(f"indexing {path} in-process (job {job.pk}) ...", flush=True)
    if fetch_and_index.run_fetch(job.pk) and fetch_and_index.run_index(job.pk):
        while True:  # the worker retries a used-up slice at once; so does this loop
            try:
                run_embed(job.pk)
                break
            except SliceUsedUp as progress:
                print(f"  {progress}", flush=True)
    job.refresh_from_db()
    repository.refresh_from_db()
    print(
        f"{corpus.name}: {repository.file_count} files, {repository.chunk_count} chunks,"
        f" {repository.embedded_count} embedded, job {job.state} in"
        f" {time.monotonic() - started:.0f} s {job.stage_timings}",
        flush=True,
    )
    if job.error:
        print(f"job error: {job.error}", flush=True)
    return repository


def ensure_repository(ref: str = "flask") -> Any:
    """One corpus's repository by corpus name or package (``flask``), indexed and embedded."""
    return index_corpus(find_corpus(ref))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--name", action="append", default=[], help="a corpus name (repeatable)")
    parser.add_argument("--split", choices=("tune", "report", "all"), help="a split's corpora")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="corpora manifest")
    args = parser.parse_args(argv)
    try:
        corpora = manifest(args.manifest)
        if args.name or args.split:
            selected = select_corpora(corpora, split=args.split or "all", names=args.name)
        else:
            selected = (find_corpus("flask", corpora),)
    except ManifestError as error:
        raise SystemExit(f"index_corpus: {error}") from None
    os.environ.setdefault("REPO_SEARCH_ALLOW_LOCAL_PATHS", "1")
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    failed = 0
    for corpus in selected:
        repository = index_corpus(corpus)
        print(f"{corpus.name}: repository id {repository.pk}")
        failed += 0 if repository.active_generation else 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
