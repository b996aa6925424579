"""Indexing benchmark: real third-party code through the real pipeline and a real Celery worker.

For each corpus (a pinned sdist from PyPI, see ``bench/sdists.py``, committed into a local git
repository and served over HTTP by dulwich's server) it adds the repository, lets a Celery
worker (2 processes) index it, and prints per-stage times and throughput (files/s, chunks/s,
MB/s), the time until full-text search works, the embedding stage's chunks/s next to the
standalone model's on the same chunks, and the worker's peak memory (all its processes).

    .venv/bin/python bench/index_benchmark.py                 # django (full text) + click (embeddings)
    .venv/bin/python bench/index_benchmark.py --corpus flask==3.0.3 --embed
    .venv/bin/python bench/index_benchmark.py --corpus DIR --embed    # a local directory

Django 5.2.8's sdist (6,890 files, 45 MB; about 5,400 files and 48,000 chunks indexed) is
measured to "searchable by full text" only: embedding its chunks on 2 CPU cores takes about half
an hour. The embedding stage is measured on click 8.1.7 (122 files, about 1,200 chunks).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sdists import unpacked_sdist  # noqa: E402 - bench/ is on the path when run as a script


def build_repository(source: Path, target: Path):  # type: ignore[no-untyped-def]
    from tests.indexing.git_server import commit_files, init_bare_repo

    files: dict[str, bytes] = {}
    for path in sorted(source.rglob("*")):
        if path.is_file() and not path.is_symlink():
            relative = path.relative_to(source).as_posix()
            files[relative] = path.read_bytes()
    repo = init_bare_repo(str(target))
    commit_files(repo, files, message="import")
    return repo, len(files), sum(len(data) for data in files.values())


class PeakMemory:
    """Samples the resident memory of the worker and its children every 0.2 s."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(0.2):
            try:
                processes = [self.process, *self.process.children(recursive=True)]
                self.peak = max(self.peak, sum(p.memory_info().rss for p in processes))
            except psutil.Error:
                continue

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def run_corpus(requirement: str, embed: bool, workdir: Path, worker_pid: int) -> None:
    from indexing.models import IndexJob, Repository
    from indexing.services.repositories import add_repository, delete_repository
    from tests.indexing.git_server import GitHttpServer

    # A directory is indexed as it is (its top folder stripped, like an sdist's): smoke runs.
    source = Path(requirement) if Path(requirement).is_dir() else unpacked_sdist(requirement)
    repo, file_count, total_bytes = build_repository(source, workdir / f"{requirement}.git")
    memory = PeakMemory(worker_pid)
    with GitHttpServer({"bench/repo.git": repo}) as server:
        started = time.monotonic()
        job = add_repository(server.url("bench/repo.git"), name=requirement)
        searchable_at = None
        while True:
            job.refresh_from_db()
            if (
                searchable_at is None
                and Repository.objects.get(pk=job.repository_id).status == "ready"
            ):
                searchable_at = time.monotonic() - started
                if not embed:
                    wait_until = time.monotonic() + 30
                    while "storing" not in job.stage_timings and time.monotonic() < wait_until:
                        time.sleep(0.1)
                        job.refresh_from_db()
                    break
            if job.is_finished:
                break
            time.sleep(0.1)
    peak = memory.stop()
    job = IndexJob.objects.get(pk=job.pk)
    repository = Repository.objects.get(pk=job.repository_id)
    timings = job.stage_timings
    mb = repository.indexed_bytes / 1e6
    print(f"\n== {requirement}: {file_count} files in the tree, {total_bytes / 1e6:.1f} MB")
    print(
        f"indexed: {repository.file_count} files, {repository.chunk_count} chunks, {mb:.1f} MB of text"
    )
    if job.state not in {"done", "completed_with_errors"} and not (searchable_at and not embed):
        print(f"job ended {job.state}: {job.error}")
    for stage in ("cloning", "walking", "chunking", "storing", "embedding"):
        if stage in timings:
            seconds = timings[stage]
            extra = ""
            if stage in {"walking", "chunking"} and seconds:
                extra = (
                    f"  {repository.file_count / seconds:8.0f} files/s  {mb / seconds:6.1f} MB/s"
                )
            if stage in {"storing", "embedding"} and seconds:
                count = job.chunks_embedded if stage == "embedding" else repository.chunk_count
                extra = f"  {count / seconds:8.1f} chunks/s"
            print(f"  {stage:<10} {seconds:7.2f} s{extra}")
    print(f"searchable by full text {searchable_at:.1f} s after the request")
    print(f"worker peak memory (all processes): {peak / 1e6:.0f} MB")
    if embed and timings.get("embedding"):
        pipeline_rate = job.chunks_embedded / timings["embedding"]
        standalone = standalone_embedding_rate(repository)
        print(
            f"embedding stage {pipeline_rate:.1f} chunks/s; standalone model on the same chunks "
            f"{standalone:.1f} chunks/s ({100 * pipeline_rate / standalone:.0f} %)"
        )
    delete_repository(repository)


def standalone_embedding_rate(repository) -> float:  # type: ignore[no-untyped-def]
    """The model alone on (up to 256 of) the same texts, batch 32, in this process."""
    import llm
    from indexing.models import Chunk
    from indexing.services.vectors import embedding_header

    chunks = list(Chunk.objects.filter(repository=repository).order_by("id")[:256])
    texts = [embedding_header(chunk) + chunk.content for chunk in chunks]
    embedder = llm.get_embedder()
    embedder.embed(texts[:32])  # load the model first
    started = time.monotonic()
    for start in range(0, len(texts), 32):
        embedder.embed(texts[start : start + 32])
    return len(texts) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--corpus", action="append", help="requirement (django==5.2.8) or a local directory"
    )
    parser.add_argument("--embed", action="store_true", help="wait for the embedding stage too")
    args = parser.parse_args()
    plan = (
        [(c, args.embed) for c in args.corpus]
        if args.corpus
        else [
            ("django==5.2.8", False),
            ("click==8.1.7", True),
        ]
    )

    if os.environ.get("REPOSEARCH_BENCH_CHILD"):
        run_plan(plan)
        return
    # Settings are read once at import, so the measuring process starts after the services.
    from reposearch.embedded_stack import free_port, services

    with tempfile.TemporaryDirectory(prefix="reposearch-bench-") as tmp:
        workdir = Path(tmp)
        with services(workdir, free_port(), free_port()) as extra:
            env = dict(os.environ, **extra)
            env.update(
                {
                    "REPOSEARCH_BENCH_CHILD": "1",
                    "REPOSEARCH_BENCH_WORKDIR": str(workdir),
                    "DJANGO_SETTINGS_MODULE": "reposearch.settings.base",
                    "REPO_SEARCH_DATA_DIR": str(workdir / "data"),
                    "REPO_SEARCH_ALLOW_PRIVATE_HOSTS": "1",
                    "REPO_SEARCH_MAX_REPO_SIZE_MB": "2000",
                }
            )
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True
            )
            subprocess.run([sys.executable, __file__, *sys.argv[1:]], cwd=ROOT, env=env, check=True)


def run_plan(plan: list[tuple[str, bool]]) -> None:
    workdir = Path(os.environ["REPOSEARCH_BENCH_WORKDIR"])
    from reposearch.processes import worker_command

    worker = subprocess.Popen(
        worker_command(concurrency=2, loglevel="WARNING", program=(sys.executable, "-m", "celery")),
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        import django

        django.setup()
        from reposearch.celery import app

        while not app.control.ping(timeout=1.0):
            time.sleep(0.5)
        for requirement, embed in plan:
            run_corpus(requirement, embed, workdir, worker.pid)
    finally:
        worker.terminate()
        worker.wait(30)


if __name__ == "__main__":
    main()
