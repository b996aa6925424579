"""The broad query set of ``fulltext_vs_tantivy.py --queries broad``: warm and first-after-start.

**Warm**: every query of ``bench/fulltext_queries.json`` (five classes; seeded order across
classes so that a drift of the machine's load falls on every class alike) runs once on each
engine to warm up, then ``repeats`` times per engine, the two alternating (A B, B A, ...):
the product's full-text search (``SearchExecutor``, ``use_vector: false``, cross-encoder off:
scope, the engine's exact top 50, fusion and ranking signals, the top 10 read) and tantivy (the
same chunks and query terms, BM25, top 10). Per class and overall: p50 / p95 of each, and the
product's over tantivy's. Both answer 10 results when 10 chunks match (the counts are
checked); the overlap of their top 10s is shown, by chunk and by place (file, chunk index: the
corpus's ~90 copies of a chunk tie, and each engine breaks ties its own way), for information
(their BM25 parameters and field handling differ). The product's time is split by its trace's stages
(p50 per stage; ``other``: hydrating the hits and what no stage times).

With ``--stream``, the same again as a server's stream of different queries: every query once,
then ``repeats`` rounds of them all, each round in an order of its own (what each engine keeps
between searches has to hold them all; tantivy's index is in the page cache whole).

**First after start**: for ``cold`` queries per class, each engine's first search in a fresh
process of its own (this script again, ``--child``): the product's after what a server does at
start (Django set up, a database connection, the ranking loops built by ``warm_up``; its
posting lists not in memory yet), tantivy's right after opening its index from disk. The
database's and the operating system's caches are not emptied (other people's work runs on
this machine): it is the cold start of the process, not of the disk. The product's decoded
posting lists outlive a process in files (``REPO_SEARCH_POSTINGS_DIR``), as tantivy's index
does: the first search maps those some process wrote before, and reads the others from the
database and writes them; the summary splits the two cases.

The product's time per query is also fitted as a fixed part plus a part per million postings
read (least squares over the queries' medians), tantivy's too, on the same axis.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

K = 10
STAGES = ("scope", "fulltext", "fusion")


def broad_report(
    args: argparse.Namespace, engine: Any, executor: Any, directory: Path, commit: str
) -> dict[str, Any]:
    """The broad query set's report: first after start (``args.cold`` per class), then warm."""
    from fulltext_queries import load

    classes = load(args.queries_file)
    report: dict[str, Any] = {"chunks": engine.documents, "repeats": args.repeats,
                              "commit": commit, "query_set": str(args.queries_file),
                              "load_average": {"start": _load()}}  # fmt: skip
    if args.cold:
        report["first_after_start"] = first_after_start(
            classes, args.cold, Path(__file__).with_name("fulltext_vs_tantivy.py"), directory
        )
        report["load_average"]["after_first"] = _load()
    report["warm"] = run_broad(classes, engine, executor, args.repeats, args.seed)
    if args.stream:
        print("  a stream of the queries, in rounds:", flush=True)
        report["stream"] = run_broad(classes, engine, executor, args.repeats, args.seed, True)
    report["load_average"]["end"] = _load()
    overall = report["warm"]["classes"]["all"]
    print(f"  commit {report['commit']}, load average {report['load_average']}", flush=True)
    print(f"  full-text search / tantivy over {overall['queries']} queries: p50"
          f" {overall['ratio_p50']}x, p95 {overall['ratio_p95']}x", flush=True)  # fmt: skip
    if "stream" in report:
        overall = report["stream"]["classes"]["all"]
        print(f"  as a stream of them all: p50 {overall['ratio_p50']}x,"
              f" p95 {overall['ratio_p95']}x", flush=True)  # fmt: skip
    return report


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def percentile(values: list[float], q: float) -> float:
    from bench.eval.harness.metrics import percentile as measured

    return round(measured(values, q), 2)


def request_of(query: str) -> Any:
    from search.executor import SearchRequest

    return SearchRequest(query=query, limit=K, use_vector=False, cross_encoder=False)


def tantivy_call(engine: Any, query: str) -> Any:
    """What tantivy is asked for ``query``: the product's terms and default scope."""
    from search.retrieval.query import parse_query
    from search.retrieval.scope import resolve_scope

    scope = resolve_scope(request_of(query))
    terms = list(parse_query(query).terms)
    return lambda: engine.search(terms, scope.include_tests, scope.include_docs)


def _stage_times(result: Any) -> dict[str, float]:
    times = {s.name: float(s.ms) for s in result.trace if s.name in STAGES and s.status == "ran"}
    times["other"] = max(0.0, float(result.ms) - sum(times.values()))
    return times


def _fulltext_detail(result: Any) -> dict[str, Any]:
    stage = next((s for s in result.trace if s.name == "fulltext"), None)
    queries = (stage.detail.get("queries") or [{}]) if stage is not None else [{}]
    found = queries[0]
    keys = ("postings_read", "chunks_checked", "lists_loaded", "matches_at_most", "fallback")
    return {key: found.get(key) for key in keys}


def _places(ids: list[int]) -> dict[int, tuple[str, int]]:
    """Each chunk's file and place in it: the corpus's copies of one chunk share them, and
    with ~90 copies scoring alike the two engines' ties pick different ones."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT id, path, index FROM indexing_chunk WHERE id = ANY(%s)", [ids])
        return {int(i): (path, int(index)) for i, path, index in cursor.fetchall()}


def measure_query(
    query: str, engine: Any, executor: Any, repeats: int
) -> tuple[dict[str, Any], dict[str, list[float]], list[dict[str, float]]]:
    """One query warm, the engines alternating: its row, the timings, the product's stages."""
    calls = _calls(query, engine, executor)
    ours, theirs = calls["search"](), calls["tantivy"]()  # warm-up
    timings: dict[str, list[float]] = {"search": [], "tantivy": []}
    stages: list[dict[str, float]] = []
    for repeat in range(repeats):
        _time_both(calls, repeat % 2 == 0, timings, stages)
    return _row(query, ours, theirs, timings), timings, stages


def measure_stream(
    order: list[tuple[str, str]], engine: Any, executor: Any, repeats: int, seed: int
) -> dict[str, tuple[dict[str, Any], dict[str, list[float]], list[dict[str, float]]]]:
    """Every query once to warm up, then ``repeats`` rounds of them all (each round in an order
    of its own): a server's stream of different queries, where what each engine keeps between
    searches has to hold the lot. Per query: its row, timings and the product's stages."""
    calls = {query: _calls(query, engine, executor) for _group, query in order}
    first = {query: (c["search"](), c["tantivy"]()) for query, c in calls.items()}
    timings: dict[str, dict[str, list[float]]] = {q: {"search": [], "tantivy": []} for q in calls}
    stages: dict[str, list[dict[str, float]]] = {q: [] for q in calls}
    for repeat in range(repeats):
        queries = [query for _group, query in order]
        random.Random(seed + 1 + repeat).shuffle(queries)
        for n, query in enumerate(queries):
            _time_both(calls[query], (n + repeat) % 2 == 0, timings[query], stages[query])
    return {q: (_row(q, *first[q], timings[q]), timings[q], stages[q]) for q in calls}


def _calls(query: str, engine: Any, executor: Any) -> dict[str, Any]:
    request = request_of(query)
    return {"search": lambda: executor.run(request), "tantivy": tantivy_call(engine, query)}


def _time_both(calls: dict[str, Any], ours_first: bool, timings: dict[str, list[float]],
               stages: list[dict[str, float]]) -> None:  # fmt: skip
    for name in ("search", "tantivy") if ours_first else ("tantivy", "search"):
        started = time.perf_counter()
        found = calls[name]()
        timings[name].append((time.perf_counter() - started) * 1000)
        if name == "search":
            stages.append(_stage_times(found))


def _row(
    query: str, ours: Any, theirs: list[int], timings: dict[str, list[float]]
) -> dict[str, Any]:
    ids = [hit.chunk_id for hit in ours.hits[:K]]
    texts = _places(ids + list(theirs[:K]))
    return {
        "query": query,
        "results": len(ours.hits),
        "tantivy_results": len(theirs),
        "overlap": len(set(ids) & set(theirs[:K])),
        "overlap_places": sum(texts[i] in {texts[j] for j in theirs[:K]} for i in ids),
        "search_ms": round(statistics.median(timings["search"]), 2),
        "tantivy_ms": round(statistics.median(timings["tantivy"]), 2),
        **_fulltext_detail(ours),
    }


def run_broad(classes: dict[str, list[str]], engine: Any, executor: Any, repeats: int,
              seed: int, stream: bool = False) -> dict[str, Any]:  # fmt: skip
    """The warm comparison over every query of ``classes`` (see the module docstring): each
    query repeated, or (``stream``) rounds of all of them."""
    order = [(group, query) for group, queries in classes.items() for query in queries]
    random.Random(seed).shuffle(order)
    timings: dict[str, dict[str, list[float]]] = {g: {"search": [], "tantivy": []} for g in classes}
    stages: dict[str, list[dict[str, float]]] = {g: [] for g in classes}
    rows: dict[str, list[dict[str, Any]]] = {g: [] for g in classes}
    streamed = measure_stream(order, engine, executor, repeats, seed) if stream else {}
    for n, (group, query) in enumerate(order, 1):
        found = streamed.get(query) or measure_query(query, engine, executor, repeats)
        row, timed, staged = found
        rows[group].append(row)
        stages[group] += staged
        for name, values in timed.items():
            timings[group][name] += values
        print(f"  {n:3d} {group:10s} {query[:40]:40s} search {row['search_ms']:7.1f}"
              f" tantivy {row['tantivy_ms']:6.1f} ms  results {row['results']}/"
              f"{row['tantivy_results']} overlap {row['overlap']:2d}/{row['overlap_places']:2d}"
              f" read {row['postings_read']}", flush=True)  # fmt: skip
    timings["all"] = {name: [v for g in classes for v in timings[g][name]]
                      for name in ("search", "tantivy")}  # fmt: skip
    stages["all"] = [s for g in classes for s in stages[g]]
    rows["all"] = [r for g in classes for r in rows[g]]
    summary = {group: summarise(timings[group], stages[group], rows[group]) for group in timings}
    cost = {name: _cost(rows["all"], f"{name}_ms") for name in ("search", "tantivy")}
    print(f"  per query, ms = fixed + per million postings read: {cost}", flush=True)
    for group, figures in summary.items():
        print(f"  {group:10s} search p50 {figures['search']['p50']:6.1f} p95"
              f" {figures['search']['p95']:6.1f} | tantivy p50 {figures['tantivy']['p50']:6.1f}"
              f" p95 {figures['tantivy']['p95']:6.1f} | ratio p50 {figures['ratio_p50']:5.2f}"
              f" p95 {figures['ratio_p95']:5.2f} (per query {figures['ratio_per_query_median']:5.2f})"
              f" | overlap ids {figures['overlap_mean']:4.1f}"
              f" places {figures['overlap_places_mean']:4.1f}"
              f" | counts differ {figures['counts_differ']} | stages p50"
              f" {figures['stages_p50']}", flush=True)  # fmt: skip
    return {"classes": summary, "cost": cost, "queries": {g: rows[g] for g in classes}}


def _cost(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    """Least squares of a query's median time on the postings the product read for it."""
    read = [float(r["postings_read"] or 0) / 1e6 for r in rows]
    times = [float(r[key]) for r in rows]
    if len(set(read)) < 2:
        return {"fixed_ms": round(statistics.mean(times), 2), "per_million_ms": 0.0}
    slope, intercept = statistics.linear_regression(read, times)
    return {"fixed_ms": round(intercept, 2), "per_million_ms": round(slope, 2)}


def summarise(timed: dict[str, list[float]], stages: list[dict[str, float]],
              rows: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    figures: dict[str, Any] = {
        name: {"p50": percentile(v, 50), "p95": percentile(v, 95), "runs": len(v)}
        for name, v in timed.items()
    }
    for q in ("p50", "p95"):
        figures[f"ratio_{q}"] = round(figures["search"][q] / max(figures["tantivy"][q], 0.01), 2)
    names = sorted({name for s in stages for name in s})
    figures["stages_p50"] = {n: percentile([s.get(n, 0.0) for s in stages], 50) for n in names}
    figures["ratio_per_query_median"] = round(
        statistics.median(r["search_ms"] / max(r["tantivy_ms"], 0.01) for r in rows), 2
    )
    figures["overlap_mean"] = round(statistics.mean(r["overlap"] for r in rows), 2)
    figures["overlap_places_mean"] = round(statistics.mean(r["overlap_places"] for r in rows), 2)
    figures["counts_differ"] = sum(r["results"] != r["tantivy_results"] for r in rows)
    figures["queries"] = len(rows)
    return figures


def first_after_start(classes: dict[str, list[str]], per_class: int, script: Path,
                      tantivy_dir: Path) -> dict[str, Any]:  # fmt: skip
    """Each engine's first search in a fresh process, for ``per_class`` queries per class."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for group, queries in classes.items():
        rows[group] = []
        for n, query in enumerate(queries[:per_class]):
            engines = ("search", "tantivy") if n % 2 == 0 else ("tantivy", "search")
            row: dict[str, Any] = {"query": query}
            for engine in engines:
                row[engine] = _child(script, engine, query, tantivy_dir)
            rows[group].append(row)
            print(f"  first {group:10s} {query[:40]:40s} search {row['search']['first_ms']:7.1f}"
                  f" (then {row['search']['second_ms']:.1f}) tantivy"
                  f" {row['tantivy']['first_ms']:6.1f} (then {row['tantivy']['second_ms']:.1f})"
                  f" ms; search's first: {row['search']['first_stages']}, lists loaded"
                  f" {row['search']['first_fulltext']['lists_loaded']}", flush=True)  # fmt: skip
    every = [r for group in rows.values() for r in group]
    summary: dict[str, Any] = {"queries": rows}
    for name in ("search", "tantivy"):
        firsts = [r[name]["first_ms"] for r in every]
        summary[name] = {"first_p50": percentile(firsts, 50), "first_max": round(max(firsts), 2),
                         "start_ms_p50": percentile([r[name]["start_ms"] for r in every], 50)}  # fmt: skip
    summary["ratio_first_p50"] = round(
        summary["search"]["first_p50"] / max(summary["tantivy"]["first_p50"], 0.01), 2
    )
    # The product keeps decoded lists in files (REPO_SEARCH_POSTINGS_DIR) that outlive a
    # process: a first search maps them when some process read them before, else it reads
    # them from the database and writes them.
    for case, rows_of in (("lists_in_files", [r for r in every if not _loaded(r)]),
                          ("lists_read", [r for r in every if _loaded(r)])):  # fmt: skip
        if rows_of:
            summary[case] = {
                "queries": len(rows_of),
                **{f"{name}_first_p50": percentile([r[name]["first_ms"] for r in rows_of], 50)
                   for name in ("search", "tantivy")},
            }  # fmt: skip
    print(f"  first after start, p50 of {len(every)}: search {summary['search']['first_p50']}"
          f" ms, tantivy {summary['tantivy']['first_p50']} ms:"
          f" {summary['ratio_first_p50']}x; {summary.get('lists_in_files')}"
          f" {summary.get('lists_read')}", flush=True)  # fmt: skip
    return summary


def _loaded(row: dict[str, Any]) -> bool:
    return bool(row["search"]["first_fulltext"]["lists_loaded"])


def _child(script: Path, engine: str, query: str, tantivy_dir: Path) -> dict[str, Any]:
    found = subprocess.run(
        [sys.executable, str(script), "--child", engine, "--child-query", query,
         "--tantivy-dir", str(tantivy_dir)],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    return dict(json.loads(found.stdout.strip().splitlines()[-1]))


def child(engine: str, query: str, tantivy: Any) -> dict[str, Any]:
    """In a fresh process: what start costs, then the first and second search of ``query``."""
    started = time.perf_counter()
    if engine == "search":
        from django.db import connection

        from search.executor import SearchExecutor
        from search.retrieval.postings_memory import warm_up

        warm_up()
        connection.ensure_connection()
        executor = SearchExecutor()
        request = request_of(query)
        call = lambda: executor.run(request)  # noqa: E731
    else:
        call = tantivy_call(tantivy(), query)
    start_ms = (time.perf_counter() - started) * 1000
    times, found = [], []
    for _ in range(2):
        began = time.perf_counter()
        found.append(call())
        times.append((time.perf_counter() - began) * 1000)
    timed: dict[str, Any] = {"start_ms": round(start_ms, 2), "first_ms": round(times[0], 2),
                             "second_ms": round(times[1], 2)}  # fmt: skip
    if engine == "search":
        timed["first_stages"] = _stage_times(found[0])
        timed["first_fulltext"] = _fulltext_detail(found[0])
    return timed
