"""Indexing benchmark: real third-party code through the real pipeline and a real Celery worker.

For each corpus (a pinned sdist from PyPI, see ``bench/sdists.py``, committed into a local git
repository and served over HTTP by dulwich's server) it adds the repository, lets a Celery
worker (2 processes) index it, and prints per-stage times and throughput (files/s, chunks/s,
MB/s), the time until full-text search works, the embedding stage's chunks/s next to the
standalone model's on the same chunks, and the worker's peak memory (all its processes).

    .venv/bin/python bench/index_benchmark.py                 # django (full text) + click (embeddings)
    .venv/bin/python bench/index_benchmark.py --corpus flask==3.0.3 --embed
    .venv/bin/python bench/index_benchmark.py --corpus DIR --embed    # a local directory
    .venv/bin/python bench/index_benchmark.py --assemble 500           # a ~500 MB repository

``--assemble MB`` builds (once; kept in ``bench/corpora/assembled-<MB>.git``) a repository of
about MB megabytes without the internet (``BENCH_CORPORA_DIR`` moves it): the text files of this venv's site-packages and of
the system's Python library, the venv's compiled extensions (``.so``: binary, skipped unread,
as a real repository's assets are), and generated Python modules with distinct names until the
tree reaches the size. It is fetched from its local path (``REPO_SEARCH_ALLOW_LOCAL_PATHS``)
under the default size limits, indexed to "searchable by full text", and the peak RSS of the
worker's largest process (the pool child that runs the index stage) is printed next to the sum.

Django 5.2.8's sdist (6,890 files, 45 MB; about 5,400 files and 48,000 chunks indexed) is
measured to "searchable by full text" only: embedding its chunks on 2 CPU cores takes about 20
minutes (docs/benchmarks.md, "The built-in embedding model": Django's chunks at about 37/s). The
embedding stage is measured on click 8.1.7 (122 files, about 1,200 chunks).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
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


TEXT_SUFFIXES = {".py", ".pyi", ".h", ".c", ".js", ".json", ".md", ".rst", ".txt", ".toml", ".cfg"}


def tree_size(bare: Path) -> tuple[int, int]:
    """Files and bytes in the tip's tree of a bare repository (``git ls-tree``)."""
    listing = subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "-l", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    sizes = [int(line.split()[3]) for line in listing if line.split()[3].isdigit()]
    return len(listing), sum(sizes)


def _generated_module(number: int) -> str:
    """A Python module with names of its own (so its chunks and tsvectors are distinct)."""
    tag = hashlib.sha256(str(number).encode()).hexdigest()[:10]
    parts = [f'"""Generated module {number} ({tag}) for the memory benchmark."""\n\n']
    for item in range(40):
        parts.append(
            f"class Record{tag}{item}:\n"
            f'    """Holds the {item}th value of the {tag} series."""\n\n'
            f"    def __init__(self, value_{item}: int) -> None:\n"
            f"        self.value_{item} = value_{item}\n\n"
            f"    def scaled_{tag}_{item}(self, factor: int) -> int:\n"
            f"        total = 0\n"
            f"        for step in range(factor):\n"
            f"            total += self.value_{item} * step + {item}\n"
            f"        return total\n\n\n"
        )
    return "".join(parts)


def assembled_repository(megabytes: int) -> Path:
    """A bare repository of about ``megabytes`` MB of files, built with git once (no internet)."""
    import sysconfig

    corpora = Path(os.environ.get("BENCH_CORPORA_DIR") or ROOT / "bench" / "corpora")
    target = corpora / f"assembled-{megabytes}.git"
    if (target / "HEAD").exists():
        return target
    budget = megabytes * 1_000_000
    tree = Path(tempfile.mkdtemp(prefix="reposearch-assemble-"))
    total = 0
    try:
        sources = [
            ("site", Path(sysconfig.get_paths()["purelib"])),
            ("stdlib", Path(sysconfig.get_paths()["stdlib"])),
        ]
        binaries: list[Path] = []
        for name, root in sources:
            for path in sorted(root.rglob("*")):
                if not path.is_file() or path.is_symlink() or "__pycache__" in path.parts:
                    continue
                relative = path.relative_to(root).as_posix().replace("site-packages", "sitepkgs")
                if path.suffix == ".so":
                    binaries.append(path)
                elif path.suffix in TEXT_SUFFIXES and total < budget * 0.6:
                    destination = tree / name / relative
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, destination)
                    total += path.stat().st_size
        assets = 0
        for path in binaries:  # the assets: as much as fits in 40 % of the size
            if assets + path.stat().st_size > budget * 0.4:
                continue
            assets += path.stat().st_size
            destination = tree / "assets" / path.name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
            total += path.stat().st_size
        number = 0
        while total < budget:
            text = _generated_module(number)
            destination = tree / "gen" / f"part_{number // 500:03}" / f"module_{number}.py"
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_text(text)
            total += len(text)
            number += 1
        git = ["git", "-C", str(tree), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
        subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "assembled"], check=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(tree), str(target)], check=True)
        subprocess.run(["git", "--git-dir", str(target), "repack", "-a", "-d", "-q"], check=True)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    print(f"assembled {target}: {tree_size(target)[0]} files, {total / 1e6:.0f} MB")
    return target


class PeakMemory:
    """Samples the resident memory of the worker and its children every 0.2 s: the peak of
    their sum (shared pages counted once per process) and of the largest single process."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.peak = 0
        self.peak_single = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(0.2):
            try:
                processes = [self.process, *self.process.children(recursive=True)]
                sizes = [p.memory_info().rss for p in processes]
                self.peak = max(self.peak, sum(sizes))
                self.peak_single = max(self.peak_single, max(sizes))
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

    local = requirement.endswith(".git") and Path(requirement).is_dir()  # --assemble's
    if local:
        file_count, total_bytes = tree_size(Path(requirement))
    else:
        # A directory is indexed as it is (its top folder stripped, like an sdist's): smoke runs.
        source = Path(requirement) if Path(requirement).is_dir() else unpacked_sdist(requirement)
        repo, file_count, total_bytes = build_repository(source, workdir / f"{requirement}.git")
    memory = PeakMemory(worker_pid)
    with contextlib.ExitStack() as stack:
        if local:
            url = requirement
        else:
            server = stack.enter_context(GitHttpServer({"bench/repo.git": repo}))
            url = server.url("bench/repo.git")
        started = time.monotonic()
        job = add_repository(url, name=Path(requirement).name)
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
    memory.stop()
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
    print(
        f"worker peak RSS: {memory.peak_single / 1e6:.0f} MB its largest process,"
        f" {memory.peak / 1e6:.0f} MB all its processes summed"
    )
    print(
        f"job: {job.files_total} files, {job.files_skipped} skipped, {job.chunks_total} chunks;"
        f" clone {repository.size_bytes / 1e6:.0f} MB; batches of"
        f" {os.environ.get('REPO_SEARCH_INDEX_BATCH_MB', '16')} MB"
    )
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
    parser.add_argument(
        "--assemble", type=int, metavar="MB", help="index a local repository of about MB megabytes"
    )
    args = parser.parse_args()
    if args.assemble and not os.environ.get("REPOSEARCH_BENCH_CHILD"):
        args.corpus = [str(assembled_repository(args.assemble))]
        sys.argv = [sys.argv[0], "--corpus", args.corpus[0]]
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
                    "REPO_SEARCH_MAX_REPO_SIZE_MB": "500" if args.assemble else "2000",
                    "REPO_SEARCH_ALLOW_LOCAL_PATHS": "1",
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
