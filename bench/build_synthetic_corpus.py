"""Build a >= 1,000,000-chunk search corpus from real code, for the latency benchmark.

    .venv/bin/python bench/build_synthetic_corpus.py [--chunks 1000000] [--rebuild]
        [--hnsw-m 32] [--hnsw-ef-construction 200] [--edited-per-1024 256]

Base: Django's own source (the copy installed in the venv), walked and chunked with
``indexing.chunking.chunk_file`` and stored with the real ``store_files`` (so every tsvector is
built exactly as the indexer builds it) in repository ``synthetic-000``; every base chunk gets
a vector: by default its real MiniLM vector (header + content, as the embed stage does; ~12 k
base chunks, ~7 minutes here, cached in ``bench/corpora/``). ``--real-vectors N`` embeds only a
sample of N chunks and gives each other base chunk the vector of the nearest sampled chunk of
the same file plus noise: quicker, but that corpus is ~N tight blobs of near-equal vectors, which
no install stores (an index of real code has a distinct vector per distinct text), and its
vector recall measures how well an index finds the nearest point in Gaussian noise. Copies: fake repositories ``synthetic-001`` ...,
each keeping a deterministic ~90 % of the base chunks, each chunk's tsvector extended with its
repository's marker token: forks and versions of one codebase. As in a real install, a copy's
chunk whose embedded text (header + content) is the base's shares the base's vector (the embed
stage reuses it: one ``EmbeddingVector`` per distinct text); ``--edited-per-1024`` of each copy's
chunks are edited (a marker comment line appended, so a new text hash) and get the base vector
plus Gaussian noise (sigma 0.025 per dimension, about cosine 0.9 to the base), renormalised.
``--edited-per-1024 1024`` makes every copied chunk distinct (the stress case for the HNSW index).

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
from synthetic_load import VectorWriter, restore_model_indexes, secondary_indexes

MANIFEST = CORPORA / "synthetic.json"
KEEP_PER_1024 = 922  # ~90 % of the base chunks in each copy
EDITED_PER_1024 = 256  # ~25 % of a copy's chunks differ from the base (distinct vectors)


def build(args: argparse.Namespace) -> dict[str, Any]:
    from django.db import connection

    from indexing.models import Chunk, Repository
    from indexing.services.storing import store_files
    from indexing.services.vectors import embedded_text, embedded_text_hash
    from llm import get_embedder

    timings: dict[str, float] = {}
    started = time.monotonic()
    files = base_files(args.base_files or None)
    base_chunks = [(f, c) for f in files for c in f.chunks]
    log(f"base: {len(files)} Django files, {len(base_chunks)} chunks")
    # Unsaved Chunks, so the header and the hash see every field the embed stage's chunks have.
    models = [
        Chunk(path=f.path, symbol=c.symbol, kind=c.kind, content=c.content) for f, c in base_chunks
    ]
    texts = [embedded_text(chunk) for chunk in models]
    base_hashes = [embedded_text_hash(chunk) for chunk in models]
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
            "TRUNCATE indexing_chunkembedding, indexing_embeddingvector, indexing_chunk, indexing_sourcefile,"
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
                cursor, ["indexing_chunk", "indexing_chunkembedding", "indexing_embeddingvector"]
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
        writer = VectorWriter(cursor, space.pk)
        content_of = {(path, index): h for _c, path, index, h in base_ids}
        base_order = [order[(path, index)] for _c, path, index, _h in base_ids]
        writer.write(
            repos[0].pk,
            [(cid, base_hashes[i]) for (cid, *_rest), i in zip(base_ids, base_order, strict=True)],
            {base_hashes[i]: vectors[i] for i in base_order},
        )
        for number, repo in enumerate(repos[1:], start=1):
            params = {
                "repo": repo.pk,
                "base": repos[0].pk,
                "copy": number,
                "marker": f"synth{number:03d}",
                "edit": f"\n# synth{number:03d}",
            }
            cursor.execute(
                "INSERT INTO indexing_sourcefile (repository_id, generation, path, language, blob_sha,"
                " size_bytes, line_count, is_test, is_doc) SELECT %(repo)s, 1, path, language,"
                " blob_sha, size_bytes, line_count, is_test, is_doc FROM indexing_sourcefile"
                " WHERE repository_id = %(base)s",
                params,
            )
            edited = f"(hashtext(b.id::text || ':edit:' || %(copy)s::text) & 1023) < {args.edited_per_1024}"
            cursor.execute(
                f"""
                INSERT INTO indexing_chunk (repository_id, file_id, generation, "index", start_line,
                    end_line, symbol, symbol_name, kind, language, path, is_test, is_doc, content,
                    content_hash, calls, token_count, search_vector)
                SELECT %(repo)s, f.id, 1, b."index", b.start_line, b.end_line, b.symbol,
                    b.symbol_name, b.kind,
                    b.language, b.path, b.is_test, b.is_doc,
                    CASE WHEN {edited} THEN b.content || %(edit)s ELSE b.content END,
                    CASE WHEN {edited}
                         THEN encode(sha256(convert_to(b.content || %(edit)s, 'UTF8')), 'hex')
                         ELSE b.content_hash END,
                    b.calls,
                    b.token_count + 1,
                    b.search_vector || setweight(to_tsvector('simple', %(marker)s), 'D')
                FROM indexing_chunk b
                JOIN indexing_sourcefile f ON f.repository_id = %(repo)s AND f.generation = 1
                    AND f.path = b.path
                WHERE b.repository_id = %(base)s
                  AND (hashtext(b.id::text || ':' || %(copy)s::text) & 1023) < {KEEP_PER_1024}
                RETURNING id, path, "index", content_hash
                """,
                params,
            )
            made = cursor.fetchall()
            chunks: list[tuple[int, str]] = []
            fresh: dict[str, Any] = {}
            made = [(cid, p, i, h != content_of[(p, i)]) for cid, p, i, h in made]
            changed = [(cid, order[(path, index)]) for cid, path, index, edit in made if edit]
            noise = rng.normal(0.0, NOISE_SIGMA, (len(changed), vectors.shape[1])).astype(
                np.float32
            )
            for cid, path, index, edit in made:
                i = order[(path, index)]
                if not edit:
                    chunks.append((cid, base_hashes[i]))
            for (cid, i), delta in zip(changed, noise, strict=True):
                _file, piece = base_chunks[i]
                text_hash = embedded_text_hash(
                    Chunk(path=_file.path, symbol=piece.symbol, kind=piece.kind,
                          content=piece.content + params["edit"])
                )  # fmt: skip
                noisy = vectors[i] + delta
                fresh[text_hash] = noisy / np.linalg.norm(noisy)
                chunks.append((cid, text_hash))
            writer.write(repo.pk, chunks, fresh)
            if number % 10 == 0 or number == copies:
                log(f"  copy {number}/{copies}: {len(made)} chunks, {len(changed)} edited")
        writer.finish()
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
        cursor.execute("VACUUM (ANALYZE) indexing_embeddingvector")
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
        cursor.execute("SELECT count(*) FROM indexing_embeddingvector")
        distinct = cursor.fetchone()[0]
    t0 = time.monotonic()
    from indexing.services.search_stats import refresh_search_stats

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
        "distinct_vectors": distinct,
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
        "edited_per_1024": args.edited_per_1024,
        "real_vectors": args.real_vectors,
        "base_files": args.base_files,
    }


def rebuild_hnsw(args: argparse.Namespace, manifest: dict[str, Any]) -> dict[str, Any]:
    """Only the HNSW index changes: drop it and build it again with the new parameters."""
    from django.db import connection

    with connection.cursor() as cursor:
        hnsw = [
            (name, definition)
            for name, definition in secondary_indexes(cursor, ["indexing_embeddingvector"])
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
    parser.add_argument("--hnsw-m", type=int, default=32)
    parser.add_argument("--hnsw-ef-construction", type=int, default=200)
    parser.add_argument(
        "--real-vectors", type=int, default=0, help="base chunks embedded (0: every one)"
    )
    parser.add_argument(
        "--edited-per-1024",
        type=int,
        default=EDITED_PER_1024,
        help="of each copy's chunks, how many per 1024 differ from the base (own vector)",
    )
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
