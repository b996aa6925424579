"""A corpus of about a million chunks of distinct real code, indexed by the product's own stages.

    .venv/bin/python bench/build_distinct_corpus.py [--packages sympy,tornado] [--no-embed]
        [--hours 2.5]

Beside the synthetic corpus (``build_synthetic_corpus.py``: 90 near-copies of Django, 260 k
distinct vectors for 1 M chunks), this one is what a large install holds: the pinned sdists of
``sdists.DISTINCT`` (32 projects: Python mostly, with C, C++, Cython and TypeScript;
113,474 files, 1,071,864 chunks). Each sdist is committed into a local bare
git repository (``<corpora>/repos/<name>.git``) and indexed in process by the product's stages
-- fetch, walk, chunk, store with the full-text statistics -- as repository ``<name>-<version>``;
then the embed stage embeds every repository with the default model, one vector per distinct
text, as a worker would.

Embedding a million chunks takes hours on two cores, so the build resumes: run it again and it
goes on where it stopped (an embed job caught mid-way is taken up again; a repository already
indexed at its commit is kept). ``--hours`` ends a run cleanly after that long (run it under
``nice``). The space's HNSW index is dropped for the load and built once at the end with the
product's parameters; until then vector search scans exactly.

The corpus has its own cluster: ``BENCH_CORPORA_DIR`` defaults to ``bench/corpora/distinct``
here, so measure with the same setting, e.g.

    BENCH_CORPORA_DIR=bench/corpora/distinct .venv/bin/python bench/vector_recall.py \\
        --scopes all --extra-queries 200 --seed 29

The manifest ``<corpora>/distinct.json`` records per package its files, chunks and time to
"searchable by full text", the embedding's chunks/s, and the totals (chunks, distinct vectors,
chunks per language, the database's size).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("BENCH_CORPORA_DIR", str(ROOT / "bench" / "corpora" / "distinct"))
sys.path.insert(0, str(ROOT))

from bench_db import CORPORA, bench_database  # noqa: E402
from index_benchmark import build_repository  # noqa: E402
from sdists import DISTINCT, pinned, unpacked_sdist  # noqa: E402
from synthetic_base import log  # noqa: E402

MANIFEST = CORPORA / "distinct.json"


def package_id(requirement: str) -> tuple[str, str]:
    """(name, version) of a pinned sdist, or of a local folder ``<name>-<version>`` (smoke runs)."""
    local = Path(requirement)
    if local.is_dir():
        name, _, version = local.name.rpartition("-")
        return (name, version) if name else (local.name, "")
    name, version, _sha = pinned(requirement)  # refuses an unpinned name
    return name, version


def index_package(requirement: str, manifest: dict[str, Any]) -> Any:
    """The package's repository, indexed at its commit (full text); not embedded here."""
    from indexing.models import FINISHED_JOB_STATES, IndexJob, Repository
    from indexing.services.stages import fetch_and_index

    name, version = package_id(requirement)
    bare = CORPORA / "repos" / f"{name}.git"
    if not bare.exists():
        bare.parent.mkdir(parents=True, exist_ok=True)
        local = Path(requirement)
        build_repository(local if local.is_dir() else unpacked_sdist(requirement), bare)
    repository = Repository.objects.filter(name=f"{name}-{version}").first()
    if repository is not None and repository.active_generation:
        return repository
    if repository is None:
        repository = Repository.objects.create(url=str(bare), name=f"{name}-{version}")
    # A run stopped mid-index left its job unfinished: the fetch stage starts it over.
    unfinished = IndexJob.objects.filter(repository=repository).exclude(
        state__in=FINISHED_JOB_STATES
    )
    job = unfinished.order_by("-pk").first() or IndexJob.objects.create(repository=repository)
    started = time.monotonic()
    if not (fetch_and_index.run_fetch(job.pk) and fetch_and_index.run_index(job.pk)):
        job.refresh_from_db()
        raise SystemExit(f"{name}: indexing failed ({job.state}): {job.error}")
    repository.refresh_from_db()
    seconds = round(time.monotonic() - started, 1)
    manifest["packages"][name] = {
        "version": version,
        "files": repository.file_count,
        "chunks": repository.chunk_count,
        "searchable_after_s": seconds,
    }
    log(
        f"{name} {version}: {repository.file_count} files, {repository.chunk_count} chunks, {seconds} s"
    )
    return repository


def hold_hnsw_index() -> Any:
    """The default model's space with its HNSW index dropped for the load (built at the end)."""
    from django.db import connection

    from indexing.models import EmbeddingSpace
    from indexing.services import vectors
    from llm import get_embedder

    embedder = get_embedder()
    # The vectors module builds a space's missing index on first use in a process: a resumed
    # run must not build it over the partial load, so this process counts it as there.
    known = EmbeddingSpace.objects.filter(key=embedder.space_key).first()
    if known is not None:
        vectors._indexed_spaces.add(known.pk)
    space = vectors.space_for(embedder)  # a new space is created with its (empty) index
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {space.index_name}")
    vectors._indexed_spaces.add(space.pk)
    return space


def embed_repository_job(repository: Any, deadline: float) -> bool:
    """Run the embed stage for ``repository`` until done or ``deadline``; True when done."""
    from indexing.models import IndexJob, JobKind, JobState
    from indexing.services.stages.embed import SliceUsedUp, run_embed

    if repository.embedded_count >= repository.chunk_count:
        return True
    job = (
        IndexJob.objects.filter(repository=repository, state=JobState.EMBEDDING).first()
        or IndexJob.objects.filter(repository=repository, state=JobState.STORING).first()
        or IndexJob.objects.create(repository=repository, kind=JobKind.REEMBED)
    )
    while time.monotonic() < deadline:
        try:
            run_embed(job.pk)
            repository.refresh_from_db()
            return True
        except SliceUsedUp as progress:
            log(f"  {repository.name}: {progress}")
    return False


def embed_all(repositories: list[Any], hours: float, manifest: dict[str, Any]) -> bool:
    from indexing.models import EmbeddingVector

    deadline = time.monotonic() + hours * 3600
    before, started = EmbeddingVector.objects.count(), time.monotonic()
    done = False
    try:
        for repository in repositories:
            if time.monotonic() >= deadline or not embed_repository_job(repository, deadline):
                return False
            made = EmbeddingVector.objects.count() - before
            rate = made / max(time.monotonic() - started, 1e-9)
            log(f"{repository.name} embedded; this run {made} vectors, {rate:.1f} chunks/s")
        done = True
        return True
    finally:  # also when stopped (Ctrl-C, SIGTERM): what this run embedded is on record
        made, seconds = EmbeddingVector.objects.count() - before, time.monotonic() - started
        run = {
            "vectors": made,
            "seconds": round(seconds),
            "chunks_per_s": round(made / max(seconds, 1), 1),
        }
        manifest.setdefault("embed_runs", []).append({**run, "finished": done})
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")


def finish(space: Any, manifest: dict[str, Any]) -> None:
    """Build the HNSW index once, analyze, and record the totals."""
    from django.db import connection

    from indexing.services.vectors import hnsw_index_sql

    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '6GB'")
        started = time.monotonic()
        log(f"building {space.index_name} ...")
        cursor.execute(hnsw_index_sql(space))
        manifest["hnsw_build_s"] = round(time.monotonic() - started, 1)
        cursor.execute("VACUUM (ANALYZE) indexing_embeddingvector")
        cursor.execute("ANALYZE indexing_chunk")
        cursor.execute("ANALYZE indexing_chunkembedding")
        cursor.execute("SELECT count(*), count(DISTINCT content_hash) FROM indexing_chunk")
        manifest["chunks"], manifest["distinct_contents"] = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FROM indexing_embeddingvector WHERE space_id = %s", [space.pk]
        )
        manifest["distinct_vectors"] = cursor.fetchone()[0]
        cursor.execute(
            "SELECT coalesce(nullif(language, ''), '(none)'), count(*) FROM indexing_chunk"
            " GROUP BY 1 ORDER BY 2 DESC LIMIT 12"
        )
        manifest["chunks_by_language"] = dict(cursor.fetchall())
        cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        manifest["database_size"] = cursor.fetchone()[0]
    manifest["space"] = space.key
    manifest["built_at"] = time.strftime("%Y-%m-%d %H:%M:%S")


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--packages", default=",".join(DISTINCT), help="comma-separated")
    parser.add_argument("--no-embed", action="store_true", help="index for full text only")
    parser.add_argument("--hours", type=float, default=24.0, help="stop embedding after this")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a session's end: stop as Ctrl-C does
    packages = [p for p in args.packages.split(",") if p]
    for package in packages:
        package_id(package)  # refuse an unpinned name before anything starts
    try:
        with bench_database(with_redis=True):
            manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"packages": {}}
            repositories = []
            for package in packages:
                repositories.append(index_package(package, manifest))
                MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
            if args.no_embed:
                return 0
            space = hold_hnsw_index()
            done = embed_all(repositories, args.hours, manifest)
            if done:
                finish(space, manifest)
            MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
            log(json.dumps({k: v for k, v in manifest.items() if k != "packages"}, indent=1))
            if not done:
                log("stopped before every repository was embedded: run again to go on")
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what was embedded is kept and on record
        log("stopped: run again to go on where it stopped")
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
