"""Exact and regex search latency (p50 / p95) beside ripgrep, and the trigram index's size.

    .venv/bin/python bench/exact_search.py [--source DIR] [--repeats 5] [--json out.json]

``--source`` (default: the installed Django package) is committed into a throwaway git
repository, fetched and indexed by the real pipeline (walk, chunk, store; no embeddings --
exact search does not read them) into the benchmarks' PostgreSQL (``bench_db``). Every query
runs through ``search.exact.dispatch.run_search`` -- the code ``POST /api/search`` runs --
once to warm up, then ``--repeats`` times, first page of 10 files. ``rg`` (Debian's ripgrep)
runs the same search over the same files, checked out, for the ratio. Sizes: the GIN trigram
index against the chunks' text (``octet_length`` of ``content``) and the chunk table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_db import bench_database

QUERIES = [
    # (query for reposearch, rg arguments)
    ('"get_object_or_404"', ["-F", "-i", "get_object_or_404"]),
    ('"HttpResponseRedirect" case:yes', ["-F", "HttpResponseRedirect"]),
    ('"return"', ["-F", "-i", "return"]),
    ('"self"', ["-F", "-i", "self"]),
    (r"/def get_\w+_display/", ["-i", r"def get_\w+_display"]),
    (r"/class \w+Admin\(/", ["-i", r"class \w+Admin\("]),
    (r"/[a-z]+_[0-9]+/", ["-i", r"[a-z]+_[0-9]+"]),
]


def _git_repository(source: Path, work: Path) -> Path:
    tree = work / "tree"
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
    env |= {"GIT_COMMITTER_EMAIL": "b@b", "PATH": "/usr/bin:/bin"}
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "corpus"]):
        subprocess.run(["git", *cmd], cwd=tree, env=env, check=True)
    return tree


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1)}


def _rg_ms(tree: Path, args: list[str], repeats: int) -> tuple[dict[str, float], int]:
    times, files = [], 0
    for _ in range(repeats + 1):
        started = time.perf_counter()
        done = subprocess.run(
            ["rg", "-n", "-l", "--hidden", "-g", "!.git", *args, "."],
            cwd=tree,
            capture_output=True,
            text=True,
            check=False,
        )
        times.append((time.perf_counter() - started) * 1000)
        files = len(done.stdout.splitlines())
    return _percentiles(times[1:]), files


def corpus_arguments(description: str | None) -> argparse.Namespace:
    """The search benchmarks' options: ``--source`` tree (default: the installed Django),
    ``--repeats``, ``--json`` (where to write the figures)."""
    import django

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--source", type=Path, default=Path(django.__file__).parent)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    return parser.parse_args()


def main() -> None:
    args = corpus_arguments(__doc__)
    with bench_database(), tempfile.TemporaryDirectory() as work:
        from django.db import connection

        from indexing.models import Repository
        from indexing.services.repositories import add_repository
        from indexing.services.stages.fetch_and_index import run_fetch, run_index
        from search.exact.dispatch import SearchCall, run_search
        from search.executor import SearchRequest

        tree = _git_repository(args.source, Path(work))
        Repository.objects.filter(name="bench/exact").delete()
        started = time.perf_counter()
        job = add_repository(str(tree), "", "bench/exact", False)
        assert run_fetch(job.pk) and run_index(job.pk)
        index_s = time.perf_counter() - started
        repository = Repository.objects.get(pk=job.repository_id)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*), sum(octet_length(content)) FROM indexing_chunk"
                " WHERE repository_id = %s AND generation = %s",
                [repository.pk, repository.active_generation],
            )
            chunks, text_bytes = cursor.fetchone()
            cursor.execute(
                "SELECT pg_relation_size('chunk_content_trgm'),"
                " pg_total_relation_size('indexing_chunk'), sum(octet_length(content))"
                " FROM indexing_chunk"
            )
            trgm_bytes, table_bytes, all_text = cursor.fetchone()
        report: dict[str, Any] = {
            "source": str(args.source),
            "files": repository.file_count,
            "chunks": chunks,
            "text_mb": round(text_bytes / 1e6, 1),
            "index_seconds": round(index_s, 1),
            "trigram_index_mb_all_corpora": round(trgm_bytes / 1e6, 1),
            "chunk_text_mb_all_corpora": round(all_text / 1e6, 1),
            "chunk_table_mb_all_corpora": round(table_bytes / 1e6, 1),
            "queries": [],
        }
        for query, rg_args in QUERIES:
            times: list[float] = []
            body = None
            for _ in range(args.repeats + 1):
                request = SearchRequest(query=f"{query} repo:bench/exact", limit=10)
                began = time.perf_counter()
                body = run_search(SearchCall(request))
                times.append((time.perf_counter() - began) * 1000)
            assert body is not None and body.exact is not None
            rg, rg_files = _rg_ms(tree, rg_args, args.repeats)
            ours = _percentiles(times[1:])
            report["queries"].append(
                {
                    "query": query,
                    **ours,
                    "total": body.exact.total,
                    "lower_bound": body.exact.total_is_lower_bound,
                    "timed_out": body.exact.timed_out,
                    "rg_p50": rg["p50"],
                    "rg_files": rg_files,
                    "ratio_p50": round(ours["p50"] / max(rg["p50"], 0.1), 1),
                }
            )
            print(json.dumps(report["queries"][-1]))
        print(json.dumps({k: v for k, v in report.items() if k != "queries"}))
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
