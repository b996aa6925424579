"""Search latency (p50 / p95, no LLM stages) on the 1 M-chunk corpus and on a real repository.

    .venv/bin/python bench/build_synthetic_corpus.py        # once: >= 1,000,000 chunks (long)
    .venv/bin/python bench/search_latency.py [--repeats 3] [--corpus synthetic,flask] [--modes ...]
        [--json bench/results/latency.json] [--plans bench/results/latency-plans.txt]
    BENCH_CORPORA_DIR=bench/corpora/distinct .venv/bin/python bench/search_latency.py \
        --corpus distinct --recall     # the corpus of build_distinct_corpus.py

Runs ``SearchExecutor`` -- the code the API runs -- in four modes: full-text only, vector only,
hybrid (full-text + vector + fusion) and the default hybrid with the cross-encoder (its scores
not cached), default scope (tests and docs left out unless the query asks), limit 10; plus
hybrid restricted to one repository. The first three leave the cross-encoder out: its cost is
the same at any corpus size (it reads the best 10). The query list mixes exact
identifiers, questions in prose, and queries made of common words (the expensive case for
full-text ranking). Every query runs once to warm up, then ``--repeats`` times; percentiles
are over all timed runs. The query embedding is timed separately (it is inside the vector
stage). The real repository is the evaluation corpus (flask 3.0.3, fetched and indexed
in-process on first use) searched with its repository filter, in the same database.

Plans: each SQL statement a search issues is captured and re-run under ``EXPLAIN (ANALYZE,
BUFFERS)`` with the same transaction-local settings; the verdict says whether any plan holds
a sequential scan of the chunk or vector tables.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench_db import CORPORA, ROOT, SERVER_SETTINGS, bench_database

QUERIES = {
    "identifier": [
        "get_object_or_404",
        "QuerySet.select_related",
        "HttpResponseRedirect",
        "csrf_exempt",
        "MigrationAutodetector",
        "parseHttpHeader",
        "send_mail",
        "make_password",
    ],
    "prose": [
        "where is the database connection configured",
        "how are migrations applied to the database",
        "validate an email address in a form",
        "how does the template engine render a variable",
        "hash a password with a salt",
        "cache middleware timeout",
        "limit the size of an uploaded file",
        "convert datetimes between time zones",
        "resolve a url path to a view",
        "sql compiler for joins",
    ],
    "common words": [
        "self return value",
        "get the data from the list",
        "if not none return",
        "def init self",
        "for item in items",
        "return self",
        "the",
        "import error",
    ],
}
MODES = {
    "fulltext": {"use_vector": False, "cross_encoder": False},
    "vector": {"use_bm25": False, "cross_encoder": False},
    "hybrid": {"cross_encoder": False},  # retrieval and fusion: what grows with the corpus
    # The default search (REPO_SEARCH_CROSS_ENCODER on): the cross-encoder reads the best
    # candidates of a prose query (not of an identifier). Its scores are kept per (query, chunk);
    # they are forgotten before every timed run, so each costs what a new question does.
    "hybrid+cross-encoder": {"cross_encoder": True},
}
SEQ_SCAN = re.compile(r"Seq Scan on (indexing_chunk|indexing_chunkembedding)\b")
# An index scan that walks most of the table is a sequential scan in disguise.
CHUNK_NODE = re.compile(
    r"on (indexing_chunk|indexing_chunkembedding) \w+ .*actual time=[\d.]+\.\.[\d.]+"
    r" rows=([\d.]+) loops=(\d+)"
)
LARGE_SCAN_ROWS = 20_000


def plan_problems(plan: str) -> list[str]:
    """Sequential scans of the chunk tables (with the rows they read), and chunk-table nodes
    that produce many rows."""
    problems = []
    lines = plan.splitlines()
    for number, line in enumerate(lines):
        seq = SEQ_SCAN.search(line)
        if seq:
            read = 0
            found = CHUNK_NODE.search(line)
            if found:
                read = int(float(found.group(2)) * int(found.group(3)))
            for following in lines[number + 1 : number + 4]:
                if "Rows Removed by Filter:" in following:
                    read += int(following.split(":")[1])
            problems.append(f"{seq.group(0)} (read {read} rows)")
            continue
        found = CHUNK_NODE.search(line)
        if found and float(found.group(2)) * int(found.group(3)) >= LARGE_SCAN_ROWS:
            node = line.strip().split("  (")[0].lstrip("-> ")
            rows = int(float(found.group(2)) * int(found.group(3)))
            problems.append(f"{node}: {rows} rows")
    return problems


class TimedEmbedder:
    """Wraps the model layer's embedder to time each query embedding."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.space_key = inner.space_key
        self.last_ms = 0.0

    def embed(self, texts: list[str], **kwargs: Any) -> Any:
        started = time.perf_counter()
        vectors = self.inner.embed(texts, **kwargs)
        self.last_ms = (time.perf_counter() - started) * 1000
        return vectors

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def percentiles(values: list[float]) -> dict[str, float]:
    from bench.eval.harness.metrics import percentile

    return {
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "max": round(max(values), 1) if values else 0.0,
        "runs": len(values),
    }


def capture_statements(run: Any) -> list[tuple[str, Any]]:
    from django.db import connection

    captured: list[tuple[str, Any]] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        run()
    return captured


def explain(statements: list[tuple[str, Any]]) -> list[str]:
    """EXPLAIN ANALYZE of each SELECT, replaying transaction-local settings first."""
    from django.db import connection, transaction

    plans = []
    with transaction.atomic(), connection.cursor() as cursor:
        for sql, params in statements:
            head = sql.lstrip().upper()
            if "SET_CONFIG" in head or head.startswith("SET "):
                cursor.execute(sql, params)
            elif head.startswith(("SELECT", "WITH")):
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                plan = "\n".join(row[0] for row in cursor.fetchall())
                plans.append(f"-- {sql.strip()[:4000]}\n-- params: {str(params)[:300]}\n{plan}\n")
        transaction.set_rollback(True)
    return plans


def measure(
    executor: Any,
    embedder: TimedEmbedder,
    repo_ids: list[Any] | None,
    repeats: int,
    modes: list[str],
) -> dict[str, Any]:
    from search.executor import SearchRequest
    from search.ranking import cross_encoder

    results: dict[str, Any] = {}
    for mode in modes:
        overrides = MODES[mode]
        per_group: dict[str, list[float]] = {}
        embed_ms: list[float] = []
        stage_ms: dict[str, list[float]] = {}
        not_run: dict[str, int] = {}
        required = [
            n
            for n, flag in (("fulltext", "use_bm25"), ("vector", "use_vector"))
            if overrides.get(flag, True)
        ]
        for group, queries in QUERIES.items():
            for query in queries:
                request = SearchRequest(query=query, limit=10, repo_ids=repo_ids, **overrides)
                executor.run(request)  # warm-up
                for _ in range(repeats):
                    if overrides.get("cross_encoder"):  # what a new question costs
                        cross_encoder.clear_cache()
                    embedder.last_ms = 0.0
                    started = time.perf_counter()
                    result = executor.run(request)
                    per_group.setdefault(group, []).append((time.perf_counter() - started) * 1000)
                    if embedder.last_ms:
                        embed_ms.append(embedder.last_ms)
                    for stage in result.trace:
                        if stage.status == "ran":
                            stage_ms.setdefault(stage.name, []).append(stage.ms)
                        elif stage.name in required:
                            problem = f"{stage.name} {stage.status}: {stage.reason[:120]}"
                            not_run[problem] = not_run.get(problem, 0) + 1
        all_runs = [value for values in per_group.values() for value in values]
        results[mode] = {
            "all": percentiles(all_runs),
            **{group: percentiles(values) for group, values in per_group.items()},
            "query_embedding_ms_p50": round(statistics.median(embed_ms), 1) if embed_ms else 0,
            "stage_ms_p50": {k: round(statistics.median(v), 1) for k, v in stage_ms.items()},
            "stages_not_run": not_run,
        }
        groups = "  ".join(
            f"{g}: {results[mode][g]['p50']}/{results[mode][g]['p95']}" for g in QUERIES
        )
        print(
            f"  {mode:20s} p50 {results[mode]['all']['p50']:7.1f} ms"
            f"  p95 {results[mode]['all']['p95']:7.1f} ms  {groups}"
            f"  stages p50 {results[mode]['stage_ms_p50']}",
            flush=True,
        )
        for problem, count in not_run.items():
            print(f"    WARNING {count}/{len(all_runs)} runs: {problem}", flush=True)
    return results


def plans_for(executor: Any, repo_ids: list[Any] | None) -> tuple[list[str], list[str]]:
    from search.executor import SearchRequest

    plans: list[str] = []
    offenders: list[str] = []
    for query in ("get_object_or_404", "self return value", "the", "how are migrations applied"):
        for mode, overrides in MODES.items():
            if overrides.get("cross_encoder", False):
                continue  # the cross-encoder runs in the process: hybrid's statements
            request = SearchRequest(query=query, limit=10, repo_ids=repo_ids, **overrides)
            statements = capture_statements(lambda request=request: executor.run(request))
            for plan in explain(statements):
                plans.append(f"=== {mode} {query!r}\n{plan}")
                offenders += [f"{mode} {query!r}: {p}" for p in plan_problems(plan)]
    return plans, offenders


def hnsw_recall(repo_ids: list[Any] | None, limit: int = 10) -> dict[str, Any]:
    """recall@limit of the vector list the executor would use, against an exact scan."""
    from accounts.visibility import Viewer
    from llm import get_embedder
    from search.executor import SearchRequest
    from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories
    from search.retrieval.vector import estimate_rows, find_space, vector_search

    embedder = get_embedder()
    space = find_space(embedder.space_key)
    if space is None:
        return {}
    recalls = []
    strategies: dict[str, int] = {}
    for query in [q for group in QUERIES.values() for q in group]:
        scope = resolve_scope(SearchRequest(query=query, repo_ids=repo_ids))
        scope_filter = build_scope_filter(scope, scope_repositories(repo_ids, Viewer.everything()))
        estimated = estimate_rows(scope_filter, None, scope.include_tests, scope.include_docs)
        vector = embedder.embed([query])[0]
        found = vector_search(
            query, vector, space, scope_filter, limit=limit, estimated_rows=estimated
        )
        exact = vector_search(
            query,
            vector,
            space,
            scope_filter,
            limit=limit,
            estimated_rows=estimated,
            force="exact",
            timeout_ms=60_000,
        )
        truth = {cid for cid, _ in exact.ranked}
        recalls.append(len(truth & {cid for cid, _ in found.ranked}) / max(len(truth), 1))
        strategy = str(found.detail.get("strategy"))
        strategies[strategy] = strategies.get(strategy, 0) + 1
    result = {
        f"recall_at_{limit}_mean": round(statistics.mean(recalls), 3),
        f"recall_at_{limit}_min": round(min(recalls), 3),
        "strategies": strategies,
    }
    print(f"  vector recall vs exact scan: {result}", flush=True)
    return result


def run_corpus(name: str, repo_ids: list[Any] | None, args: argparse.Namespace) -> dict[str, Any]:
    from llm import get_embedder
    from search.executor import SearchExecutor

    embedder = TimedEmbedder(get_embedder())
    executor = SearchExecutor(embedder=embedder)
    count = sum(len(q) for q in QUERIES.values())
    print(f"{name}: {count} queries x {args.repeats} runs", flush=True)
    results = measure(executor, embedder, repo_ids, args.repeats, args.modes)
    if args.recall:
        results["vector_recall"] = hnsw_recall(repo_ids)
    plans, offenders = plans_for(executor, repo_ids)
    results["plans"] = {"statements": len(plans), "problems": offenders}
    with open(args.plans, "a", encoding="utf-8") as out:
        out.write(f"##### {name}\n\n" + "\n".join(plans) + "\n")
    verdict = "none" if not offenders else "\n    ".join(["", *offenders])
    print(
        f"  plans: {len(plans)} statements; sequential scans of the chunk tables, or chunk-table"
        f" nodes producing >= {LARGE_SCAN_ROWS} rows: {verdict}"
    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--modes",
        type=lambda value: [m for m in value.split(",") if m],
        default=list(MODES),
        help=f"comma-separated, of {', '.join(MODES)} (default: all)",
    )
    parser.add_argument("--corpus", default="synthetic,flask")
    parser.add_argument("--append", action="store_true", help="merge into an existing --json")
    parser.add_argument(
        "--recall", action="store_true", help="also the vector list's recall against exact search"
    )
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/latency.json")
    parser.add_argument("--plans", type=Path, default=ROOT / "bench/results/latency-plans.txt")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        parser.error(f"--modes: no mode {unknown[0]!r} (there are {', '.join(MODES)})")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    if not args.append:
        args.plans.write_text("")
    report: dict[str, Any] = {"server_settings": SERVER_SETTINGS}
    if args.append and args.json.exists():
        report = json.loads(args.json.read_text())
    wanted = {name.strip() for name in args.corpus.split(",")}
    with bench_database(with_redis="flask" in wanted):
        from django.db import connection

        from indexing.models import Chunk, Repository

        manifest = CORPORA / "synthetic.json"
        if "synthetic" in wanted:
            if not manifest.exists():
                raise SystemExit("no synthetic corpus: run bench/build_synthetic_corpus.py first")
            report["synthetic_manifest"] = json.loads(manifest.read_text())
            total = Chunk.objects.count()
            print(f"database: {total} chunks in {Repository.objects.count()} repositories")
            report["synthetic"] = run_corpus(
                f"synthetic ({total} chunks, all repositories)", None, args
            )
            one = Repository.objects.filter(name="synthetic-001").first()
            if one is not None:
                report["synthetic_one_repo"] = run_corpus(
                    f"synthetic, one repository ({one.chunk_count} chunks)", [one.pk], args
                )
        if "distinct" in wanted:  # build_distinct_corpus.py's, with its BENCH_CORPORA_DIR
            built = CORPORA / "distinct.json"
            if not built.exists():
                raise SystemExit(
                    f"no distinct-code corpus in {CORPORA}: run build_distinct_corpus.py"
                )
            report["distinct_manifest"] = json.loads(built.read_text())
            total = Chunk.objects.count()
            report["distinct"] = run_corpus(f"distinct code ({total} chunks, all)", None, args)
        if "flask" in wanted:
            sys.path.insert(0, str(ROOT / "bench" / "eval"))
            from index_corpus import ensure_repository

            flask = ensure_repository("flask")
            report["flask"] = run_corpus(
                f"flask 3.0.3 ({flask.chunk_count} chunks, repository filter)", [flask.pk], args
            )
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
            report["database_size"] = cursor.fetchone()[0]
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.json} and {args.plans}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
