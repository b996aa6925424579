"""Exact and regex search latency (p50 / p95) beside ripgrep, and the trigram index's size.

    .venv/bin/python bench/exact_search.py [--source DIR] [--repeats 5] [--json out.json]
        [--copies N] [--reuse]

``--source`` (default: the installed Django package) is committed into a throwaway git
repository, fetched and indexed by the real pipeline (walk, chunk, store; no embeddings --
exact search does not read them) into the benchmarks' PostgreSQL (``bench_db``). Every query
runs through ``search.router.run_search`` -- the code ``POST /api/search`` runs --
once to warm up, then ``--repeats`` times, first page of 10 files. ``rg`` (Debian's ripgrep)
runs the same search over the same files, checked out, for the ratio (``-L``: the copies are
symbolic links to the one tree). Sizes: the GIN trigram index (``chunk_repo_content_trgm``,
repository and text) against the chunks' text (``octet_length`` of ``content``) and the chunk
table.

``--copies N`` makes a large corpus quickly: after indexing, the repository is copied N - 1 times
in SQL (``bench/exact-copy-NNN``: its files and chunks, without tsvectors or call lists, which
exact search does not read; the trigram index is dropped for the load and rebuilt, timed). The
queries then run twice: over every copy (``repo:bench/exact*``, the whole corpus when the cluster
holds nothing else; rg over N copies of the tree) and with ``repo:bench/exact`` (one copy among
them). ``--reuse`` keeps an already indexed and
copied corpus in the benchmarks' cluster (same source, same N) instead of indexing again.
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
            ["rg", "-n", "-l", "-L", "--hidden", "-g", "!.git", *args, "."],
            cwd=tree,
            capture_output=True,
            text=True,
            check=False,
        )
        times.append((time.perf_counter() - started) * 1000)
        files = len(done.stdout.splitlines())
    return _percentiles(times[1:]), files


def corpus_arguments(description: str | None, *, copies: bool = False) -> argparse.Namespace:
    """The search benchmarks' options: ``--source`` tree (default: the installed Django),
    ``--repeats``, ``--json`` (where to write the figures); with ``copies``, ``--copies`` and
    ``--reuse`` too."""
    import django

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--source", type=Path, default=Path(django.__file__).parent)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    if copies:
        parser.add_argument("--rg-repeats", type=int, help="default: --repeats")
        parser.add_argument("--copies", type=int, default=1)
        parser.add_argument("--reuse", action="store_true")
    return parser.parse_args()


COPY_PREFIX = "bench/exact-copy-"
# Migration indexing.0015's index (dropped for the copies' load, rebuilt once after).
TRIGRAM_INDEX_SQL = (
    "CREATE INDEX chunk_repo_content_trgm ON indexing_chunk"
    ' USING gin (repository_id, content COLLATE "C" gin_trgm_ops)'
)
_NOT_COPIED = {"id", "repository_id", "file_id"}
_CHUNK_DEFAULTS = {"search_vector": "NULL", "calls": "'[]'::jsonb", "summary": "''"}


def _columns(cursor: Any, table: str) -> list[str]:
    cursor.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
        " ORDER BY ordinal_position",
        [table],
    )
    return [row[0] for row in cursor.fetchall()]


def _quoted(columns: list[str]) -> str:
    return ", ".join(f'"{c}"' for c in columns)


def _copy_repository(cursor: Any, source_id: Any, number: int) -> None:
    """One more copy of the indexed repository: its row, its live files and chunks (SQL only)."""
    repo_cols = [c for c in _columns(cursor, "indexing_repository") if c != "id"]
    suffix = f"-copy-{number:03d}"
    changed = {"name": suffix, "url": f"#{suffix}"}
    values = [f'"{c}" || %s' if c in changed else f'"{c}"' for c in repo_cols]
    cursor.execute(
        f"INSERT INTO indexing_repository (id, {_quoted(repo_cols)})"
        f" SELECT gen_random_uuid(), {', '.join(values)} FROM indexing_repository WHERE id = %s"
        " RETURNING id",
        [*(changed[c] for c in repo_cols if c in changed), source_id],
    )
    new_id = cursor.fetchone()[0]
    file_cols = [c for c in _columns(cursor, "indexing_sourcefile") if c not in _NOT_COPIED]
    chunk_cols = [c for c in _columns(cursor, "indexing_chunk") if c not in _NOT_COPIED]
    chunk_values = [_CHUNK_DEFAULTS.get(c, f'c."{c}"') for c in chunk_cols]
    quoted_files = _quoted(file_cols)
    cursor.execute(
        f"WITH nf AS (INSERT INTO indexing_sourcefile (repository_id, {quoted_files})"
        f" SELECT %s, {quoted_files} FROM indexing_sourcefile f"
        " WHERE f.repository_id = %s"
        " AND f.generation = (SELECT active_generation FROM indexing_repository WHERE id = %s)"
        " RETURNING id, path, generation)"
        f" INSERT INTO indexing_chunk (repository_id, file_id, {_quoted(chunk_cols)})"
        f" SELECT %s, nf.id, {', '.join(chunk_values)} FROM indexing_chunk c"
        " JOIN indexing_sourcefile f ON f.id = c.file_id"
        " JOIN nf ON nf.path = f.path AND nf.generation = f.generation"
        " WHERE c.repository_id = %s",
        [new_id, source_id, source_id, new_id, source_id],
    )


def _make_copies(repository: Any, copies: int) -> float:
    """Copies 1 .. copies - 1 of ``repository`` (the trigram index rebuilt once); seconds."""
    from django.db import connection

    from indexing.models import Repository

    others = Repository.objects.filter(name__startswith="bench/exact").exclude(pk=repository.pk)
    if others.count() == copies - 1 and others.filter(name__startswith=COPY_PREFIX).count() == (
        copies - 1
    ):
        return 0.0
    started = time.perf_counter()
    with connection.cursor() as cursor:  # in SQL: the ORM's cascade would load every chunk
        ids = list(others.values_list("pk", flat=True))
        cursor.execute("DELETE FROM indexing_chunk WHERE repository_id = ANY(%s)", [ids])
        cursor.execute("DELETE FROM indexing_sourcefile WHERE repository_id = ANY(%s)", [ids])
    others.delete()
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS chunk_repo_content_trgm")
        for number in range(1, copies):
            _copy_repository(cursor, repository.pk, number)
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(TRIGRAM_INDEX_SQL)
        cursor.execute("VACUUM ANALYZE indexing_chunk")
        cursor.execute("VACUUM ANALYZE indexing_sourcefile")
    return time.perf_counter() - started


def _time_queries(
    tree: Path, scope: str, copies: int, repeats: int, rg_repeats: int
) -> list[dict[str, Any]]:
    from search.executor import SearchRequest
    from search.router import SearchCall, run_search

    rows = []
    rg_root = tree
    if copies > 1:  # rg over as many copies as the corpus holds
        rg_root = tree.parent / "copies"
        if not rg_root.exists():
            rg_root.mkdir()
            for number in range(copies):
                (rg_root / f"{number:03d}").symlink_to(tree)
    for query, rg_args in QUERIES:
        times: list[float] = []
        body = None
        for _ in range(repeats + 1):
            request = SearchRequest(query=f"{query} {scope}".strip(), limit=10)
            began = time.perf_counter()
            body = run_search(SearchCall(request))
            times.append((time.perf_counter() - began) * 1000)
        assert body is not None and body.exact is not None
        rg, rg_files = _rg_ms(rg_root, rg_args, rg_repeats)
        ours = _percentiles(times[1:])
        rows.append(
            {
                "scope": "all copies" if copies > 1 else scope,
                "query": query,
                **ours,
                "total": body.exact.total,
                "lower_bound": body.exact.total_is_lower_bound,
                "timed_out": body.exact.timed_out,
                "rg_p50": rg["p50"],
                "rg_files": rg_files,
                "ratio_p50": round(ours["p50"] / max(rg["p50"], 0.1), 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    args = extra = corpus_arguments(__doc__, copies=True)
    with bench_database(with_redis=True), tempfile.TemporaryDirectory() as work:
        from django.db import connection

        from indexing.models import Repository
        from indexing.services.repositories import add_repository
        from indexing.services.stages.fetch_and_index import run_fetch, run_index

        tree = _git_repository(args.source, Path(work))
        existing = Repository.objects.filter(name="bench/exact", status="ready").first()
        index_s = 0.0
        if extra.reuse and existing is not None and existing.file_count:
            repository = existing
        else:
            Repository.objects.filter(name__startswith="bench/exact").delete()
            started = time.perf_counter()
            job = add_repository(str(tree), "", "bench/exact", False)
            assert run_fetch(job.pk) and run_index(job.pk)
            index_s = time.perf_counter() - started
            repository = Repository.objects.get(pk=job.repository_id)
        copy_s = _make_copies(repository, extra.copies)
        rg_repeats = args.repeats if args.rg_repeats is None else args.rg_repeats
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*), sum(octet_length(content)) FROM indexing_chunk"
                " WHERE repository_id = %s AND generation = %s",
                [repository.pk, repository.active_generation],
            )
            chunks, text_bytes = cursor.fetchone()
            cursor.execute(
                "SELECT pg_relation_size('chunk_repo_content_trgm'),"
                " pg_total_relation_size('indexing_chunk'), sum(octet_length(content)), count(*)"
                " FROM indexing_chunk"
            )
            trgm_bytes, table_bytes, all_text, all_chunks = cursor.fetchone()
        report: dict[str, Any] = {
            "source": str(args.source),
            "files": repository.file_count,
            "chunks": chunks,
            "text_mb": round(text_bytes / 1e6, 1),
            "index_seconds": round(index_s, 1),
            "copies": extra.copies,
            "copy_and_trigram_index_seconds": round(copy_s, 1),
            "chunks_all_corpora": all_chunks,
            "trigram_index_mb_all_corpora": round(trgm_bytes / 1e6, 1),
            "chunk_text_mb_all_corpora": round(all_text / 1e6, 1),
            "chunk_table_mb_all_corpora": round(table_bytes / 1e6, 1),
            "queries": [],
        }
        print(json.dumps({k: v for k, v in report.items() if k != "queries"}), flush=True)
        if extra.copies > 1:
            everywhere = "repo:bench/exact*"  # the copies and the original: rg's files
            report["queries"] += _time_queries(
                tree, everywhere, extra.copies, args.repeats, rg_repeats
            )
        report["queries"] += _time_queries(tree, "repo:bench/exact", 1, args.repeats, rg_repeats)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
