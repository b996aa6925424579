"""Vector recall@10 of the search's vector list against an exact scan, per ``hnsw.ef_search``.

    .venv/bin/python bench/vector_recall.py [--ef-search 40,100,200] [--extra-queries 60]
        [--seed 11] [--scopes all,one,three] [--corpora flask,marshmallow,...] [--packages kombu,...]
        [--json bench/results/vector-recall.json]

Runs on whatever the benchmark database holds (the synthetic corpus of
``build_synthetic_corpus.py``, or the evaluation corpora indexed by ``bench/eval``). Queries: the
latency benchmark's 26 plus ``--extra-queries`` taken from the corpus itself (a symbol name and
the first words of a random chunk's body, as a person would half-remember them; ``--seed``
draws another set, to report on queries no setting was chosen on). Scopes: every
repository; one repository; three repositories (large enough for the HNSW path). With
``--corpora``, those evaluation corpora (distinct real code; indexed and embedded on first use,
``bench/eval/index_corpus.py``) are one more scope, measured with the automatic strategy and
with the HNSW path forced (the scope is small enough that the automatic one scans exactly).
``--packages`` does the same with installed Python packages (their ``.py`` files chunked and
stored as the indexer does, embedded with the local model; kept for later runs).
For each scope and ef_search: mean and minimum recall@10 of ``vector_search`` against
``force="exact"``, the same counted over distinct vectors (chunks that share a text share a
vector: on the near-copy synthetic corpus the exact top 10 is often copies of one), and the
p50 / p95 of ``vector_search`` (query embedding excluded). On the distinct-code corpus
(``build_distinct_corpus.py``) run it with that corpus's ``BENCH_CORPORA_DIR``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench_db import ROOT, bench_database
from search_latency import QUERIES


def corpus_queries(count: int, seed: int = 11) -> list[str]:
    from indexing.models import Chunk

    ids = list(Chunk.objects.exclude(symbol="").values_list("id", flat=True)[:50_000])
    picked = random.Random(seed).sample(ids, min(count, len(ids)))
    queries = []
    for chunk in Chunk.objects.filter(id__in=picked).only("symbol", "content"):
        body = " ".join(chunk.content.split()[2:9])
        queries.append(f"{chunk.symbol.split('.')[-1]} {body}"[:120])
    return queries


def package_repository(name: str) -> Any:
    """Repository ``pkg-<name>``: an installed package's Python files, indexed and embedded."""
    import hashlib
    import importlib

    import llm
    from indexing.chunking import chunk_file
    from indexing.languages import is_doc_path, is_test_path
    from indexing.models import Repository
    from indexing.services.search_stats import refresh_search_stats
    from indexing.services.storing import FileToStore, StoredChunk, store_files
    from indexing.services.vectors import embed_repository, space_for

    found = Repository.objects.filter(name=f"pkg-{name}").first()
    if found is not None and found.embedded_count:
        return found
    root = Path(importlib.import_module(name).__file__ or "").parent
    files = []
    for path in sorted(root.rglob("*.py")):
        rel = f"{name}/{path.relative_to(root).as_posix()}"
        text = path.read_text(encoding="utf-8", errors="replace")
        pieces = chunk_file(text, "python", rel)
        if not pieces:
            continue
        chunks = [
            StoredChunk(
                p.index, p.start_line, p.end_line, p.symbol or "", p.kind, p.content, tuple(p.calls)
            )
            for p in pieces
        ]  # fmt: skip
        files.append(
            FileToStore(
                path=rel, blob_sha=hashlib.sha1(text.encode()).hexdigest(),
                size_bytes=len(text.encode()), language="python", is_test=is_test_path(rel),
                is_doc=is_doc_path(rel, "python"), line_count=text.count("\n") + 1, chunks=chunks,
            )
        )  # fmt: skip
    repository = found or Repository.objects.create(
        url=f"https://example.invalid/pkg/{name}.git", name=f"pkg-{name}", branch="main",
        status="ready", active_generation=1, last_indexed_commit="0" * 40,
    )  # fmt: skip
    if not found:
        store_files(repository.pk, 1, files)
    count = sum(len(f.chunks) for f in files)
    Repository.objects.filter(pk=repository.pk).update(chunk_count=count)
    refresh_search_stats(repository.pk)
    repository.refresh_from_db()
    embedder = llm.get_embedder()
    print(f"  {name}: {len(files)} files, {count} chunks; embedding", flush=True)
    started = time.monotonic()
    done = embed_repository(repository, space_for(embedder), embedder.embed, batch_size=64)
    print(f"  {name}: {done} in {time.monotonic() - started:.0f} s", flush=True)
    Repository.objects.filter(pk=repository.pk).update(embedded_count=done.embedded + done.reused)
    repository.refresh_from_db()
    return repository


def scopes(wanted: set[str]) -> dict[str, list[Any] | None]:
    from indexing.models import Repository

    ids = list(Repository.objects.order_by("name").values_list("id", flat=True))
    found: dict[str, list[Any] | None] = {}
    if "all" in wanted:
        found["all"] = None
    if "one" in wanted and ids:
        found["one"] = ids[len(ids) // 2 : len(ids) // 2 + 1]
    if "three" in wanted and len(ids) >= 3:
        found["three"] = ids[:3]
    return found


def vector_ids(chunk_ids: set[int], space_id: int) -> set[int]:
    """The distinct vectors behind ``chunk_ids``: copies of one text count once."""
    from indexing.models import ChunkEmbedding

    return set(
        ChunkEmbedding.objects.filter(chunk_id__in=chunk_ids, space_id=space_id).values_list(
            "embedding_vector_id", flat=True
        )
    )


def measure(
    queries: list[str], repo_ids: list[Any] | None, ef_values: list[int], force: Any = None
) -> dict[str, Any]:
    from accounts.visibility import Viewer
    from llm import get_embedder
    from search.executor import SearchRequest
    from search.retrieval.scope import build_scope_filter, resolve_scope, scope_repositories
    from search.retrieval.vector import estimate_rows, find_space, vector_search

    embedder = get_embedder()
    space = find_space(embedder.space_key)
    assert space is not None, "no vectors in the benchmark database"
    vectors = embedder.embed(queries)
    cases = []
    for query, vector in zip(queries, vectors, strict=True):
        scope = resolve_scope(SearchRequest(query=query, repo_ids=repo_ids))
        scope_filter = build_scope_filter(scope, scope_repositories(repo_ids, Viewer.everything()))
        estimated = estimate_rows(scope_filter, None, scope.include_tests, scope.include_docs)
        exact = vector_search(
            query, vector, space, scope_filter, limit=10, estimated_rows=estimated,
            force="exact", timeout_ms=60_000,
        )  # fmt: skip
        truth = {c for c, _ in exact.ranked}
        cases.append((query, vector, scope_filter, estimated, truth, vector_ids(truth, space.pk)))
    result: dict[str, Any] = {"estimated_rows": cases[0][3] if cases else 0}
    for ef in ef_values:
        recalls, distinct, times, strategies = [], [], [], {}
        for query, vector, scope_filter, estimated, truth, truth_vectors in cases:
            started = time.perf_counter()
            found = vector_search(
                query, vector, space, scope_filter, limit=50, estimated_rows=estimated,
                ef_search=ef, force=force,
            )  # fmt: skip
            times.append((time.perf_counter() - started) * 1000)
            top = {c for c, _ in found.ranked[:10]}
            recalls.append(len(truth & top) / max(len(truth), 1))
            top_vectors = vector_ids(top, space.pk)
            distinct.append(len(truth_vectors & top_vectors) / max(len(truth_vectors), 1))
            strategy = str(found.detail.get("strategy"))
            strategies[strategy] = strategies.get(strategy, 0) + 1
        times.sort()
        row = {
            "recall_at_10_mean": round(statistics.mean(recalls), 3),
            "recall_at_10_min": round(min(recalls), 2),
            "distinct_vector_recall_at_10_mean": round(statistics.mean(distinct), 3),
            "queries_below_0_9": sum(r < 0.9 for r in recalls),
            "ms_p50": round(times[len(times) // 2], 1),
            "ms_p95": round(times[min(len(times) - 1, int(len(times) * 0.95))], 1),
            "strategies": strategies,
        }
        print(f"    ef_search={ef:4d}: {row}", flush=True)
        row["per_query"] = [round(r, 2) for r in recalls]  # in the JSON: to compare two runs
        result[f"ef_search={ef}"] = row
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ef-search", default="40,100,200")
    parser.add_argument("--extra-queries", type=int, default=60)
    parser.add_argument("--seed", type=int, default=11, help="which corpus queries are drawn")
    parser.add_argument("--scopes", default="all,one,three")
    parser.add_argument("--corpora", default="", help="evaluation corpora as one more scope")
    parser.add_argument("--packages", default="", help="installed packages as one more scope")
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/vector-recall.json")
    args = parser.parse_args(argv)
    ef_values = [int(x) for x in args.ef_search.split(",")]
    corpora = [name.strip() for name in args.corpora.split(",") if name.strip()]
    packages = [name.strip() for name in args.packages.split(",") if name.strip()]
    with bench_database(with_redis=bool(corpora)):
        from indexing.models import Chunk, EmbeddingVector, Repository

        queries = [q for group in QUERIES.values() for q in group]
        queries += corpus_queries(args.extra_queries, args.seed)
        report: dict[str, Any] = {
            "chunks": Chunk.objects.count(),
            "distinct_vectors": EmbeddingVector.objects.count(),
            "repositories": Repository.objects.count(),
            "queries": len(queries),
            "seed": args.seed,
        }
        print(
            f"{report['chunks']} chunks, {report['distinct_vectors']} distinct vectors,"
            f" {report['repositories']} repositories; {len(queries)} queries",
            flush=True,
        )
        for name, repo_ids in scopes({s.strip() for s in args.scopes.split(",")}).items():
            print(f"  scope {name}:", flush=True)
            report[name] = measure(queries, repo_ids, ef_values)
        if corpora:
            sys.path.insert(0, str(ROOT / "bench" / "eval"))
            from index_corpus import ensure_repository

            real = [ensure_repository(name) for name in corpora]
            ids = [repository.pk for repository in real]
            chunks = sum(repository.chunk_count for repository in real)
            report["corpora"] = {"names": corpora, "chunks": chunks}
            for label, force in (("auto", None), ("hnsw forced", "hnsw")):
                print(f"  scope corpora {corpora} ({chunks} chunks), {label}:", flush=True)
                report["corpora"][label] = measure(queries, ids, ef_values, force)
        if packages:
            real = [package_repository(name) for name in packages]
            ids = [repository.pk for repository in real]
            chunks = sum(repository.chunk_count for repository in real)
            report["packages"] = {"names": packages, "chunks": chunks}
            for label, force in (("auto", None), ("hnsw forced", "hnsw")):
                print(f"  scope packages {packages} ({chunks} chunks), {label}:", flush=True)
                report["packages"][label] = measure(queries, ids, ef_values, force)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
