"""The cost of a second branch: rows, bytes and time, against the first branch and against
indexing the same branch as a repository of its own (what a second branch cost before).

    .venv/bin/python -m reposearch.embedded_stack run -- \
        .venv/bin/python bench/branch_benchmark.py [--source DIR] [--changed 30] [--json out.json]

``--source`` (default: the installed Django package) is committed on ``main`` of a throwaway
git repository; the branch ``next`` changes ``--changed`` of its Python files (a function
appended to each), adds one file and deletes one. The real pipeline's fetch and index stages
(``indexing.services.stages``; no embeddings: vectors are shared by content hash already, so a
shared chunk needs none) index, in order: ``main`` (the default branch), ``next`` as a second
branch of the same repository (``indexing.services.branches``), and ``next`` again as a
repository of its own. For each: the index stage's wall time, rows written (files, chunks,
shared-file references) and bytes (``pg_total_relation_size`` of the file, chunk and
shared-file tables with their indexes and TOAST; the BM25 postings apart).

Runs against the benchmarks' PostgreSQL (``bench_db``; ``BENCH_DATABASE_URL`` to use another
server, e.g. the embedded stack's ``DATABASE_URL``); the fetch takes a clone slot in Redis,
hence the embedded stack.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_db import bench_database

TABLES = ("indexing_sourcefile", "indexing_chunk", "indexing_sharedfile")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b", "PATH": "/usr/bin:/bin",
}  # fmt: skip


def _git(tree: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=tree, env=GIT_ENV, check=True, capture_output=True)


def build_branches(source: Path, work: Path, changed: int) -> tuple[Path, dict[str, int]]:
    """A repository with ``main`` = ``source`` and ``next`` = main with ``changed`` Python files
    edited, one added and one deleted."""
    tree = work / "tree"
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git(tree, "init", "-q", "-b", "main")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-qm", "main")
    _git(tree, "checkout", "-q", "-b", "next")
    python = sorted(p for p in tree.rglob("*.py") if ".git" not in p.parts)
    step = max(len(python) // max(changed, 1), 1)
    edited = python[::step][:changed]
    for number, path in enumerate(edited):
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"\n\ndef next_branch_change_{number}():\n    return {number}\n")
    (tree / "next_branch_only.py").write_text("def only_on_next():\n    return 'next'\n")
    deleted = [p for p in python if p not in edited][-1]
    deleted.unlink()
    _git(tree, "add", "-A")
    _git(tree, "commit", "-qm", "next")
    _git(tree, "checkout", "-q", "main")
    return tree, {"python_files": len(python), "edited": len(edited), "added": 1, "deleted": 1}


def _footprint() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM indexing_sourcefile), (SELECT count(*) FROM"
            " indexing_chunk), (SELECT count(*) FROM indexing_sharedfile), "
            + " + ".join(f"pg_total_relation_size('{t}')" for t in TABLES)
            + ", pg_total_relation_size('search_termpostings')"
        )
        files, chunks, shared, size, postings = cursor.fetchone()
    return {"files": files, "chunks": chunks, "shared_files": shared, "bytes": int(size),
            "postings_bytes": int(postings)}  # fmt: skip


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {key: after[key] - before[key] for key in after}


def _run_stages(job_id: int) -> dict[str, float]:
    from indexing.services.stages.fetch_and_index import run_fetch, run_index

    started = time.perf_counter()
    assert run_fetch(job_id), "fetch failed"
    fetched = time.perf_counter()
    assert run_index(job_id), "index failed"
    return {
        "fetch_s": round(fetched - started, 2),
        "index_s": round(time.perf_counter() - fetched, 2),
    }


def measure(tree: Path) -> dict[str, Any]:
    from indexing.models import IndexedBranch, IndexJob, JobKind, Repository

    Repository.objects.filter(name__startswith="bench/branches").delete()
    report: dict[str, Any] = {}
    # Rows made directly (add_repository would also enqueue the jobs on a broker).
    before = _footprint()
    repository = Repository.objects.create(url=str(tree), name="bench/branches")
    job = IndexJob.objects.create(repository=repository, kind=JobKind.FULL)
    report["main"] = {**_run_stages(job.pk), **_delta(before, after := _footprint())}

    branch = IndexedBranch.objects.create(repository=repository, name="next")
    job = IndexJob.objects.create(repository=repository, branch=branch, kind=JobKind.FULL)
    timing = _run_stages(job.pk)
    branch.refresh_from_db()
    report["next as a second branch"] = {
        **timing, **_delta(after, later := _footprint()),
        "branch_files": branch.file_count, "branch_chunks": branch.chunk_count,
        "shared_file_count": branch.shared_file_count,
    }  # fmt: skip

    separate = Repository.objects.create(url=str(tree), name="bench/branches-next", branch="next")
    job = IndexJob.objects.create(repository=separate, kind=JobKind.FULL)
    report["next as its own repository"] = {**_run_stages(job.pk), **_delta(later, _footprint())}
    return report


def main() -> None:
    import django

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", type=Path, default=Path(django.__file__).parent)
    parser.add_argument("--changed", type=int, default=30, help="Python files next changes")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("REPO_SEARCH_ALLOW_LOCAL_PATHS", "1")  # the corpus is a local clone
    with bench_database(), tempfile.TemporaryDirectory() as work:
        tree, change = build_branches(args.source, Path(work), args.changed)
        report = {"source": str(args.source), "change": change, **measure(tree)}
    for name, figures in report.items():
        print(f"{name}: {json.dumps(figures)}")
    first, second = report["main"], report["next as a second branch"]
    alone = report["next as its own repository"]
    print(
        f"second branch: {second['files']} file rows, {second['chunks']} chunk rows, "
        f"{second['shared_files']} shared-file rows, {second['bytes'] / 1e6:.2f} MB, "
        f"index {second['index_s']} s -- the first branch: {first['files']} file rows, "
        f"{first['chunks']} chunk rows, {first['bytes'] / 1e6:.2f} MB, index {first['index_s']} s"
        f"; as its own repository: {alone['bytes'] / 1e6:.2f} MB, index {alone['index_s']} s"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
