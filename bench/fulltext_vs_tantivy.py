"""Full-text search side by side with tantivy, and top-10 agreement with an uncapped BM25.

    .venv/bin/python bench/build_synthetic_corpus.py [--chunks 150000]   # once
    .venv/bin/pip install -e ".[bench]"                                  # tantivy
    .venv/bin/python bench/fulltext_vs_tantivy.py [--repeats 5] [--json out.json]
        [--queries broad [--cold 2] [--seed 32] [--stream]]

On the corpus in the bench database (every live chunk of every repository), for the 26 queries
of ``bench/search_latency.py`` (identifiers, prose, common words), default scope (tests and
docs left out unless the query asks), interleaved in one process, each query warmed once:

- **reposearch, retrieval**: ``fulltext_search`` -- the term postings' exact top-k -- top 10;
- **reposearch, full-text search**: ``SearchExecutor`` in full-text mode (``POST /api/search``
  with ``use_vector: false``: scope, visibility, a 50-deep list, ranking signals);
- **the capped path** (``use_postings=False``: the fallback, BM25 over capped candidates), top 10;
- **tantivy** (an index of the same chunks, kept in ``bench/corpora/tantivy/<corpus key>``: the
  symbol, path and body text of each ``tsvector``, weights x3 / x1.5 / x1 as query boosts, the
  same test/doc exclusions), top 10, no match count.

``--queries broad`` runs the broad set (``bench/fulltext_queries.json``: 225 queries of 1-5 words
in five classes) against tantivy only, warm and first after start (``bench/fulltext_broad.py``).

Agreement: the share of a list's top 10 in the top 10 of an **uncapped** BM25 in SQL (the same
formula, ties by chunk id), per query class; tantivy's own BM25 differs, so its is for information.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_db import CORPORA, ROOT, SERVER_SETTINGS, bench_database
from search_latency import QUERIES

K = 10


def chunk_texts() -> list[dict[str, Any]]:
    """Each live chunk's fields as the indexer builds its tsvector (cached per distinct text)."""
    from django.db import connection

    from indexing.identifiers import searchable_text
    from indexing.services.storing import _path_text

    cache: dict[str, str] = {}

    def text(value: str, convert: Any = searchable_text) -> str:
        found = cache.get(value)
        if found is None:
            found = cache[value] = convert(value)
        return found

    docs = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, c.symbol, c.path, c.content, c.is_test, c.is_doc, r.name"
            " FROM indexing_chunk c JOIN indexing_repository r ON r.id = c.repository_id"
            " AND c.generation = r.active_generation AND r.status = 'ready'"
        )
        for chunk_id, symbol, path, content, is_test, is_doc, repository in cursor:
            body = text(content)
            copy = re.fullmatch(r"synthetic-(\d+)", repository)
            if copy and int(copy.group(1)) > 0:  # the copies' marker token (the build adds it)
                body = f"{body} synth{int(copy.group(1)):03d}"
            docs.append(
                {
                    "id": chunk_id,
                    "symbol": text(symbol),
                    "path": text(path, _path_text),
                    "body": body,
                    "test": int(is_test),
                    "doc": int(is_doc),
                }
            )
    return docs


class Tantivy:
    """An in-memory tantivy index of the chunks, queried like reposearch's full text."""

    BOOSTS = {"symbol": 3.0, "path": 1.5, "body": 1.0}

    def __init__(self, directory: Path | None, docs: Callable[[], list[dict[str, Any]]]) -> None:
        """Open the index in ``directory``, or build it there (in memory when None) from
        ``docs()``."""
        import tantivy

        self.tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        for name in self.BOOSTS:
            builder.add_text_field(name, tokenizer_name="default", index_option="freq")
        builder.add_integer_field("id", stored=True, fast=True)
        builder.add_integer_field("test", indexed=True)
        builder.add_integer_field("doc", indexed=True)
        self.schema = builder.build()
        built = directory is not None and (directory / "complete").exists()
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        path = str(directory) if directory is not None else None
        self.index = tantivy.Index(self.schema, path=path, reuse=built)
        if not built:
            writer = self.index.writer(heap_size=256_000_000, num_threads=1)
            for doc in docs():
                writer.add_document(tantivy.Document(**{k: [v] for k, v in doc.items()}))
            writer.commit()
            writer.wait_merging_threads()
            if directory is not None:
                (directory / "complete").write_text("built\n")
        self.built = not built
        self.index.reload()
        self.searcher = self.index.searcher()
        self.documents = int(self.searcher.num_docs)

    def search(self, terms: list[str], include_tests: bool, include_docs: bool) -> list[int]:
        t = self.tantivy
        should = [
            (
                t.Occur.Should,
                t.Query.boost_query(t.Query.term_query(self.schema, field, term), boost),
            )
            for term in terms
            for field, boost in self.BOOSTS.items()
        ]
        clauses = [(t.Occur.Must, t.Query.boolean_query(should))]
        if not include_tests:
            clauses.append((t.Occur.MustNot, t.Query.term_query(self.schema, "test", 1)))
        if not include_docs:
            clauses.append((t.Occur.MustNot, t.Query.term_query(self.schema, "doc", 1)))
        hits = self.searcher.search(t.Query.boolean_query(clauses), K, count=False).hits
        return [self.searcher.doc(address)["id"][0] for _score, address in hits]


def uncapped(parsed: Any, scope: Any, stats: Any, boost: float) -> list[int]:
    """Every match scored in SQL from its tsvector: the reference ranking."""
    from django.db import connection

    from indexing.bm25 import BM25
    from indexing.postings_format import TF2_SQL
    from search.retrieval.fulltext import MAX_SCORED_TERMS, idf, informative_words
    from search.retrieval.query import tsquery_any
    from search.retrieval.scope import LIVE_CHUNKS_SQL

    terms = [t for t in parsed.terms if stats.df.get(t, 0) > 0][:MAX_SCORED_TERMS]
    if not terms:
        return []
    informative = informative_words(parsed, stats)
    idfs = [idf(stats.documents, stats.df[t]) for t in terms]
    sql = f"""
        SELECT c.id, s.score * CASE WHEN s.present @> %s::text[] AND cardinality(%s::text[]) > 0
                                    THEN %s ELSE 1 END AS score
        FROM indexing_chunk c {LIVE_CHUNKS_SQL}
        CROSS JOIN LATERAL (
            SELECT array_agg(u.lexeme) AS present,
                   sum(w.idf * (({TF2_SQL}) / 2.0) * {BM25.k1 + 1}
                       / (({TF2_SQL}) / 2.0
                          + {BM25.k1} * (1 - {BM25.b} + {BM25.b} * greatest(c.token_count, 1) / %s::float8)))
                     AS score
            FROM unnest(c.search_vector) u
            JOIN unnest(%s::text[], %s::float8[]) w(term, idf) ON w.term = u.lexeme
        ) s
        WHERE r.id = ANY(%s) AND {scope.sql} AND c.search_vector @@ %s::tsquery
        ORDER BY score DESC, c.id LIMIT %s
    """
    params = [informative, informative, 1.0 + boost, stats.average_length, terms, idfs,
              scope.repository_ids, *scope.params, tsquery_any(terms), K]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")
        cursor.execute(sql, params)
        return [int(row[0]) for row in cursor.fetchall()]


def run_query(
    query: str,
    group: str,
    engine: Tantivy,
    executor: Any,
    boost: float,
    repeats: int,
    timings: dict[str, dict[str, list[float]]],
) -> dict[str, Any]:
    """Time the three systems on one query (interleaved) and compare their top 10s."""
    from accounts.visibility import Viewer
    from search.executor import SearchRequest
    from search.retrieval.fulltext import corpus_stats, fulltext_search
    from search.retrieval.query import parse_query
    from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories

    request = SearchRequest(query=query, limit=K, use_vector=False)
    scope = resolve_scope(request)
    scope_filter = build_scope_filter(scope, scope_repositories(None, Viewer.everything()))
    parsed = parse_query(query)
    terms = list(parsed.terms)

    def retrieval(exact: bool = True) -> Any:
        return fulltext_search(
            parsed, scope_filter, limit=K, cap=request.tuning.fulltext_candidates,
            use_postings=exact, all_terms_boost=boost, timeout_ms=60_000,
        )  # fmt: skip

    calls = {
        "retrieval": retrieval,
        "capped": lambda: retrieval(exact=False),
        "search": lambda: executor.run(request),
        "tantivy": lambda: engine.search(terms, scope.include_tests, scope.include_docs),
    }
    results = {name: call() for name, call in calls.items()}  # warm-up
    for _ in range(repeats):
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            timings[name].setdefault(group, []).append((time.perf_counter() - t0) * 1000)
    stats = corpus_stats(scope_filter.repositories, parsed.terms)
    truth = set(uncapped(parsed, scope_filter, stats, boost))
    found = results["retrieval"]
    lists = {
        "postings": [cid for cid, _s in found.ranked],
        "capped": [cid for cid, _s in results["capped"].ranked],
        "tantivy": results["tantivy"],
    }
    row: dict[str, Any] = {"query": query, "class": group, "exact": found.detail.get("exact")}
    for name, ids in lists.items():
        row[name] = len(truth & set(ids[:K])) if truth else K
    row["postings_read"] = found.detail.get("postings_read")
    row["chunks_checked"] = found.detail.get("chunks_checked")
    return row


def percentiles(values: list[float]) -> dict[str, float]:
    from bench.eval.harness.metrics import percentile

    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1)}


def tantivy_directory() -> Path:
    """Where the corpus's tantivy index is kept (``bench/corpora/tantivy``), named for the live
    chunks it holds and the last change to the code that makes their text: a corpus built
    again, or another tokenisation, gets an index of its own."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(max(c.id), 0), coalesce(sum(c.id), 0) FROM indexing_chunk c"
            " JOIN indexing_repository r ON r.id = c.repository_id"
            " AND c.generation = r.active_generation AND r.status = 'ready'"
        )
        count, last, total = cursor.fetchone()
    code = _commit("indexing/identifiers.py", "indexing/services/storing.py")
    return CORPORA / "tantivy" / f"{count}-{last}-{total % 10**9}-{code}"


def run(args: argparse.Namespace) -> dict[str, Any]:
    from django.db import connection

    from search.executor import SearchExecutor
    from search.types import SearchTuning

    started = time.monotonic()
    directory = args.tantivy_dir or tantivy_directory()
    engine = Tantivy(directory, chunk_texts)
    print(f"tantivy: {'indexed' if engine.built else 'opened'} {engine.documents} chunks in"
          f" {time.monotonic() - started:.1f} s ({directory})", flush=True)  # fmt: skip
    if args.queries == "broad":
        from fulltext_broad import broad_report

        return broad_report(args, engine, SearchExecutor(), directory, _commit())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_total_relation_size('search_termpostings'),"
            " pg_total_relation_size('search_termbucket'),"
            " pg_total_relation_size('search_chunkfacetstat')"
        )
        postings_bytes, bucket_bytes, facet_bytes = cursor.fetchone()
    executor = SearchExecutor()
    boost = SearchTuning().all_terms_boost
    load = {"start": [round(v, 1) for v in os.getloadavg()]}
    systems = ("retrieval", "capped", "search", "tantivy")
    timings: dict[str, dict[str, list[float]]] = {s: {} for s in systems}
    agreement: dict[str, dict[str, list[int]]] = {s: {} for s in ("postings", "capped", "tantivy")}
    per_query: list[dict[str, Any]] = []
    for group, queries in QUERIES.items():
        for query in queries:
            row = run_query(query, group, engine, executor, boost, args.repeats, timings)
            for name in agreement:
                agreement[name].setdefault(group, []).append(row[name])
            per_query.append(row)
            print(
                f"  {group:12s} {query[:34]:34s} agree postings {row['postings']:2d}"
                f" capped {row['capped']:2d} tantivy {row['tantivy']:2d}"
                f"  read {row['postings_read']}",
                flush=True,
            )
    report: dict[str, Any] = {"chunks": engine.documents, "repeats": args.repeats, "queries": per_query,
                              "commit": _commit(), "load_average": load}  # fmt: skip
    load["end"] = [round(v, 1) for v in os.getloadavg()]
    report["storage"] = {"term_postings_mb": round(postings_bytes / 2**20, 1),
                         "term_buckets_mb": round(bucket_bytes / 2**20, 1),
                         "facet_stats_mb": round(facet_bytes / 2**20, 1)}  # fmt: skip
    for name in systems:
        every = [v for values in timings[name].values() for v in values]
        report[name] = {"all": percentiles(every)}
        report[name].update({g: percentiles(v) for g, v in timings[name].items()})
        line = "  ".join(f"{g}: {report[name][g]['p50']}/{report[name][g]['p95']}" for g in QUERIES)
        print(f"  {name:9s} p50 {report[name]['all']['p50']:6.1f} ms"
              f"  p95 {report[name]['all']['p95']:6.1f} ms  {line}", flush=True)  # fmt: skip
    for name, groups in agreement.items():
        means = {g: round(statistics.mean(v), 1) for g, v in groups.items()}
        report[f"agreement_{name}"] = means
        print(f"  top-{K} agreement with uncapped BM25, {name:8s}: {means}", flush=True)
    ratio = report["search"]["all"]["p50"] / max(report["tantivy"]["all"]["p50"], 0.01)
    report["search_over_tantivy_p50"] = round(ratio, 2)
    print(f"  commit {report['commit']}, load average {load}", flush=True)
    print(f"  full-text search / tantivy at p50: {ratio:.2f}x;"
          f" term postings {report['storage']['term_postings_mb']} MB"
          f" + packed short lists {report['storage']['term_buckets_mb']} MB", flush=True)  # fmt: skip
    return report


def at_hand(lists: int | None, known: int | None = None) -> int:
    """Keep ``lists`` posting lists at hand in this process (None: ``HOT_LISTS``), and the places
    of ``known`` in the packs (None: ``KNOWN_LISTS``): how many lists at hand."""
    from search.retrieval import postings_cache, postings_files

    if lists is not None:
        postings_cache._HOT = type(postings_cache._HOT)(lists)
    if known is not None:
        postings_files.KNOWN_LISTS = known
    return int(postings_cache._HOT.budget)


def postings_held(budget: int) -> dict[str, int]:
    """What this process holds of the posting lists after the run: lists at hand (of
    ``budget``), packs mapped, mappings of pack files (deleted ones too), resident kB."""
    from search.retrieval import postings_cache, postings_files

    files = str(postings_files.root())
    with open("/proc/self/maps") as maps:
        mappings = sum(files in line for line in maps)
    status = Path("/proc/self/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    return {"hot_lists": budget, "at_hand": len(postings_cache._HOT),
            "known_lists": getattr(postings_files, "KNOWN_LISTS", 0),
            "packs_mapped": postings_files.mapped_packs(), "pack_mappings": mappings,
            "rss_kb": rss}  # fmt: skip


def _commit(*paths: str) -> str:
    """The checkout's commit (with ``paths``: the last one that changed them)."""
    command = ["git", "log", "-1", "--format=%h", "--", *paths] if paths else [
        "git", "rev-parse", "--short", "HEAD"]  # fmt: skip
    found = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    return found.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    from fulltext_queries import OUT

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, help="default bench/results/tantivy[-broad].json")
    parser.add_argument("--queries", choices=("fixed", "broad"), default="fixed")
    parser.add_argument("--queries-file", type=Path, default=OUT)
    parser.add_argument("--cold", type=int, default=2, help="broad: first-after-start per class")
    parser.add_argument("--seed", type=int, default=32, help="broad: the queries' order")
    parser.add_argument("--stream", action="store_true", help="broad: also rounds of them all")
    parser.add_argument("--tantivy-dir", type=Path, help="default bench/corpora/tantivy/<key>")
    parser.add_argument("--hot-lists", type=int, help="lists a process keeps at hand (HOT_LISTS)")
    parser.add_argument("--known-lists", type=int, help="places of lists kept (KNOWN_LISTS)")
    parser.add_argument("--child", choices=("search", "tantivy"), help=argparse.SUPPRESS)
    parser.add_argument("--child-query", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        from fulltext_broad import child

        with bench_database():
            found = child(args.child, args.child_query, lambda: Tantivy(args.tantivy_dir, list))
        print(json.dumps(found))
        return 0
    name = "tantivy-broad.json" if args.queries == "broad" else "tantivy.json"
    args.json = args.json or ROOT / "bench" / "results" / name
    args.json.parent.mkdir(parents=True, exist_ok=True)
    with bench_database():
        hot = at_hand(args.hot_lists, args.known_lists)
        report = {"server_settings": SERVER_SETTINGS, **run(args), "postings": postings_held(hot)}
    print(f"  posting lists at hand {report['postings']}", flush=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
