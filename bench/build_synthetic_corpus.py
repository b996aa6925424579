"""Build a >= 1,000,000-chunk search corpus from real code, for the latency benchmark.

    .venv/bin/python bench/build_synthetic_corpus.py [--chunks 1000000] [--rebuild]
        [--hnsw-m 16] [--hnsw-ef-construction 64]

Base: Django's own source (the copy installed in the venv), walked and chunked with
``indexing.chunking.chunk_file`` and stored with the real ``store_files`` (so every tsvector is
built exactly as the indexer builds it) in repository ``synthetic-000``; every base chunk gets
a vector: real MiniLM vectors (header + content, as the embed stage does; cached in
``bench/corpora/``) for ``--real-vectors`` sampled chunks (4096: embedding all ~12 k base chunks
took over 15 minutes on the shared 2 cores), and for each other base chunk the vector of the
nearest sampled chunk of the same file plus noise. Copies: fake repositories ``synthetic-001`` ...,
each keeping a deterministic ~90 % of the base chunks, each chunk's tsvector extended with its
repository's marker token, and its vector = the base vector + Gaussian noise (sigma 0.025 per
dimension, about cosine 0.9 to the base), renormalised: forks and versions of one codebase.

Secondary indexes are dropped during the load and rebuilt afterwards, timed one by one. A
manifest ``bench/corpora/synthetic.json`` records the parameters and timings; a later run with
the same parameters reuses the corpus, and one that only changes ``--hnsw-m`` /
``--hnsw-ef-construction`` rebuilds just the HNSW index.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
from typing import Any

import numpy as np
from bench_db import CORPORA, bench_database
from synthetic_base import NOISE_SIGMA, base_files, base_vectors, log

MANIFEST = CORPORA / "synthetic.json"
KEEP_PER_1024 = 922  # ~90 % of the base chunks in each copy


def secondary_indexes(cursor: Any, tables: list[str]) -> list[tuple[str, str]]:
    """(name, definition) of indexes that back no constraint, to drop and rebuild."""
    cursor.execute(
        """
        SELECT i.indexname, i.indexdef FROM pg_indexes i
        WHERE i.tablename = ANY(%s) AND i.schemaname = 'public'
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid =
                          (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass)
        ORDER BY i.indexname
        """,
        [tables],
    )
    return list(cursor.fetchall())


def restore_model_indexes() -> None:
    """Create any index the models declare that is missing (on the emptied tables: instant)."""
    from django.db import connection

    from indexing.models import Chunk, ChunkEmbedding

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")
        present = {row[0] for row in cursor.fetchall()}
    with connection.schema_editor() as editor:
        for model in (Chunk, ChunkEmbedding):
            for index in model._meta.indexes:
                if index.name not in present:
                    log(f"restoring missing index {index.name}")
                    editor.add_index(model, index)


def copy_vectors(cursor: Any, rows: list[tuple[int, int, Any, str]], vectors: np.ndarray) -> None:
    """Binary COPY of (chunk_id, space_id, repository_id, content_hash, vector)."""
    from pgvector.psycopg import register_vector

    # A cursor copies its connection's adapters when created: register first, then open one.
    register_vector(cursor.connection)
    raw = cursor.connection.cursor()
    sql = (
        "COPY indexing_chunkembedding (chunk_id, space_id, repository_id, content_hash, vector)"
        " FROM STDIN WITH (FORMAT BINARY)"
    )
    with raw.copy(sql) as copy:
        copy.set_types(["int8", "int8", "uuid", "varchar", "vector"])
        for (chunk_id, space_id, repo_id, content_hash), vector in zip(rows, vectors, strict=True):
            copy.write_row((chunk_id, space_id, repo_id, content_hash, vector))


def build(args: argparse.Namespace) -> dict[str, Any]:
    from django.db import connection

    from indexing.models import Chunk, Repository
    from indexing.services.storing import store_files
    from indexing.services.vectors import embedding_header
    from llm import get_embedder

    timings: dict[str, float] = {}
    started = time.monotonic()
    files = base_files(args.base_files or None)
    base_chunks = [(f, c) for f in files for c in f.chunks]
    log(f"base: {len(files)} Django files, {len(base_chunks)} chunks")
    # An unsaved Chunk, so the header sees every field the embed stage's chunks have.
    texts = [
        embedding_header(Chunk(path=f.path, symbol=c.symbol, kind=c.kind, content=c.content))
        + c.content
        for f, c in base_chunks
    ]
    rng = np.random.default_rng(20240407)
    vectors = base_vectors([f.path for f, _c in base_chunks], texts, args.real_vectors, rng)
    timings["base_embed_or_cache_s"] = round(time.monotonic() - started, 1)
    copies = int(
        np.ceil((args.chunks - len(base_chunks)) / (len(base_chunks) * KEEP_PER_1024 / 1024))
    )

    embedder = get_embedder()
    from indexing.services import vectors as embedding_service

    with connection.cursor() as cursor:
        log("clearing the chunk tables")
        cursor.execute(
            "TRUNCATE indexing_chunkembedding, indexing_chunk, indexing_sourcefile,"
            " indexing_indexjob, indexing_repository CASCADE"
        )
    restore_model_indexes()  # an interrupted earlier build may have left some dropped
    if hasattr(embedding_service, "space_for"):
        space = embedding_service.space_for(embedder)
    else:
        space = embedding_service.embedding_space(embedder.provider, embedder.model, embedder.dim)
    with connection.cursor() as cursor:
        # The GIN and HNSW indexes are the expensive ones to maintain row by row; B-trees stay.
        indexes = [
            (name, definition)
            for name, definition in secondary_indexes(
                cursor, ["indexing_chunk", "indexing_chunkembedding"]
            )
            if "USING gin" in definition or "USING hnsw" in definition
        ]
        for name, _definition in indexes:
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
        log(f"dropped {len(indexes)} secondary indexes for the load")

    t0 = time.monotonic()
    repos = [
        Repository.objects.create(
            url=f"https://example.invalid/synthetic/{n:03d}.git",
            name=f"synthetic-{n:03d}",
            branch="main",
            status="ready",
            active_generation=1,
            last_indexed_commit=hashlib.sha1(f"{n}".encode()).hexdigest(),
        )
        for n in range(copies + 1)
    ]
    store_files(repos[0].pk, 1, files)
    base_ids = list(
        Chunk.objects.filter(repository=repos[0]).values_list("id", "path", "index", "content_hash")
    )
    order = {(f.path, c.index): i for i, (f, c) in enumerate(base_chunks)}
    timings["base_store_s"] = round(time.monotonic() - t0, 1)
    t0 = time.monotonic()
    with connection.cursor() as cursor:
        copy_vectors(
            cursor,
            [(cid, space.pk, repos[0].pk, h) for cid, _p, _i, h in base_ids],
            np.stack([vectors[order[(path, index)]] for _c, path, index, _h in base_ids]),
        )
        for number, repo in enumerate(repos[1:], start=1):
            params = {
                "repo": repo.pk,
                "base": repos[0].pk,
                "copy": number,
                "marker": f"synth{number:03d}",
            }
            cursor.execute(
                "INSERT INTO indexing_sourcefile (repository_id, generation, path, language, blob_sha,"
                " size_bytes, line_count, is_test, is_doc) SELECT %(repo)s, 1, path, language,"
                " blob_sha, size_bytes, line_count, is_test, is_doc FROM indexing_sourcefile"
                " WHERE repository_id = %(base)s",
                params,
            )
            cursor.execute(
                """
                INSERT INTO indexing_chunk (repository_id, file_id, generation, "index", start_line,
                    end_line, symbol, symbol_name, kind, language, path, is_test, is_doc, content,
                    content_hash, calls, token_count, search_vector)
                SELECT %(repo)s, f.id, 1, b."index", b.start_line, b.end_line, b.symbol,
                    b.symbol_name, b.kind,
                    b.language, b.path, b.is_test, b.is_doc, b.content, b.content_hash, b.calls,
                    b.token_count + 1,
                    b.search_vector || setweight(to_tsvector('simple', %(marker)s), 'D')
                FROM indexing_chunk b
                JOIN indexing_sourcefile f ON f.repository_id = %(repo)s AND f.generation = 1
                    AND f.path = b.path
                WHERE b.repository_id = %(base)s
                  AND (hashtext(b.id::text || ':' || %(copy)s::text) & 1023) < """
                + str(KEEP_PER_1024)
                + """
                RETURNING id, content_hash, path, "index"
                """,
                params,
            )
            made = cursor.fetchall()
            base_block = np.stack([vectors[order[(path, index)]] for _c, _h, path, index in made])
            noisy = base_block + rng.normal(0.0, NOISE_SIGMA, base_block.shape).astype(np.float32)
            noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
            copy_vectors(cursor, [(cid, space.pk, repo.pk, h) for cid, h, _p, _i in made], noisy)
            if number % 10 == 0 or number == copies:
                log(f"  copy {number}/{copies}: {len(made)} chunks")
    timings["copies_load_s"] = round(time.monotonic() - t0, 1)
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '6GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 1")
        for name, definition in indexes:
            if "USING hnsw" in definition:
                definition = re.sub(r" WITH \([^)]*\)", "", definition)
                definition = definition.replace(
                    "vector_cosine_ops)",
                    f"vector_cosine_ops) WITH (m = {args.hnsw_m}, ef_construction = {args.hnsw_ef_construction})",
                    1,
                )
            log(f"building {name} ...")
            t0 = time.monotonic()
            cursor.execute(definition)
            timings[f"index_{name}_s"] = round(time.monotonic() - t0, 1)
            log(f"  {name}: {timings[f'index_{name}_s']} s")
        t0 = time.monotonic()
        cursor.execute("VACUUM (ANALYZE) indexing_chunk")
        cursor.execute("VACUUM (ANALYZE) indexing_chunkembedding")
        cursor.execute("ANALYZE indexing_sourcefile")
        timings["analyze_s"] = round(time.monotonic() - t0, 1)
        cursor.execute(
            "UPDATE indexing_repository r SET chunk_count = c.n, embedded_count = c.n,"
            " file_count = (SELECT count(*) FROM indexing_sourcefile f WHERE f.repository_id = r.id)"
            " FROM (SELECT repository_id, count(*) n FROM indexing_chunk GROUP BY 1) c"
            " WHERE c.repository_id = r.id"
        )
        cursor.execute("SELECT count(*) FROM indexing_chunk")
        total = cursor.fetchone()[0]
    t0 = time.monotonic()
    from search.retrieval.corpus_stats import refresh_search_stats

    for repo in repos:
        refresh_search_stats(repo.pk)  # BM25 statistics, as the index stage refreshes them
    timings["search_stats_s"] = round(time.monotonic() - t0, 1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        size = cursor.fetchone()[0]
    timings["total_s"] = round(time.monotonic() - started, 1)
    return {
        "parameters": parameters(args),
        "base_files": len(files),
        "base_chunks": len(base_chunks),
        "repositories": len(repos),
        "chunks": total,
        "database_size": size,
        "space": getattr(space, "key", str(space)),
        "timings": timings,
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def parameters(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "chunks": args.chunks,
        "hnsw_m": args.hnsw_m,
        "hnsw_ef_construction": args.hnsw_ef_construction,
        "noise_sigma": NOISE_SIGMA,
        "real_vectors": args.real_vectors,
        "base_files": args.base_files,
    }


def rebuild_hnsw(args: argparse.Namespace, manifest: dict[str, Any]) -> dict[str, Any]:
    """Only the HNSW index changes: drop it and build it again with the new parameters."""
    from django.db import connection

    with connection.cursor() as cursor:
        hnsw = [
            (name, definition)
            for name, definition in secondary_indexes(cursor, ["indexing_chunkembedding"])
            if "USING hnsw" in definition
        ]
        cursor.execute("SET maintenance_work_mem = '6GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 1")
        for name, definition in hnsw:
            definition = re.sub(r" WITH \([^)]*\)", "", definition).replace(
                "vector_cosine_ops)",
                f"vector_cosine_ops) WITH (m = {args.hnsw_m},"
                f" ef_construction = {args.hnsw_ef_construction})",
                1,
            )
            cursor.execute(f'DROP INDEX "{name}"')
            log(
                f"rebuilding {name} with m={args.hnsw_m}, ef_construction={args.hnsw_ef_construction}"
            )
            t0 = time.monotonic()
            cursor.execute(definition)
            manifest["timings"][f"index_{name}_s"] = round(time.monotonic() - t0, 1)
            log(f"  {name}: {manifest['timings'][f'index_{name}_s']} s")
    manifest["parameters"] = parameters(args)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--hnsw-m", type=int, default=16)
    parser.add_argument("--hnsw-ef-construction", type=int, default=64)
    parser.add_argument("--real-vectors", type=int, default=4096, help="base chunks embedded")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument(
        "--base-files", type=int, default=0, help="only the first N Django files (smoke runs)"
    )
    args = parser.parse_args(argv)
    with bench_database():
        if MANIFEST.exists() and not args.rebuild:
            manifest = json.loads(MANIFEST.read_text())
            if manifest.get("parameters") == parameters(args):
                log(f"corpus already built ({manifest['chunks']} chunks); --rebuild to redo")
                return 0
            hnsw_keys = {"hnsw_m", "hnsw_ef_construction"}
            old = {k: v for k, v in manifest.get("parameters", {}).items() if k not in hnsw_keys}
            new = {k: v for k, v in parameters(args).items() if k not in hnsw_keys}
            if old == new:
                manifest = rebuild_hnsw(args, manifest)
                MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
                return 0
        manifest = build(args)
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
        log(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
