"""The real part of the synthetic latency corpus: Django's source chunked, and its vectors.

Used by ``build_synthetic_corpus.py``: ``base_files()`` walks and chunks Django's source the
way the indexer does; ``base_vectors()`` gives each base chunk its real MiniLM vector (cached in
``bench/corpora/``), or real vectors for a sample and borrowed-plus-noise vectors for the rest.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_db import CORPORA

BASE_VECTORS = CORPORA / "django-base-vectors.npy"
NOISE_SIGMA = 0.025
TEXT_SUFFIXES = {".py", ".html", ".js", ".txt", ".css"}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def base_files(limit: int | None = None) -> list[Any]:
    """Django's source files, chunked like the indexer does (the first ``limit`` with chunks)."""
    import django as django_package

    from indexing.chunking import chunk_file
    from indexing.languages import detect_language, is_doc_path, is_test_path
    from indexing.services.storing import FileToStore, StoredChunk

    root = Path(django_package.__file__).parent
    files = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in TEXT_SUFFIXES or not path.is_file() or "locale" in path.parts:
            continue
        rel = "django/" + path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        language = detect_language(rel) or ""
        pieces = chunk_file(text, language or None, rel)
        if not pieces:
            continue
        if limit is not None and len(files) >= limit:
            break
        chunks = [
            StoredChunk(
                p.index, p.start_line, p.end_line, p.symbol or "", p.kind, p.content, tuple(p.calls)
            )
            for p in pieces
        ]
        files.append(
            FileToStore(
                path=rel,
                blob_sha=hashlib.sha1(text.encode()).hexdigest(),
                size_bytes=len(text.encode()),
                language=language,
                is_test=is_test_path(rel),
                is_doc=is_doc_path(rel, language),
                line_count=text.count("\n") + 1,
                chunks=chunks,
            )
        )
    return files


def embed_texts_cached(texts: list[str]) -> np.ndarray:
    """Real vectors of ``texts``, cached by the hash of the texts."""
    from llm import get_embedder

    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    cache = BASE_VECTORS.with_suffix(f".{digest}.npy")
    if cache.exists():
        return np.load(cache)
    embedder = get_embedder()
    log(f"embedding {len(texts)} base chunks with {embedder.space_key} (cached afterwards)")
    started = time.monotonic()
    parts = []
    for start in range(0, len(texts), 256):
        parts.append(embedder.embed(texts[start : start + 256]))
        done = start + len(parts[-1])
        log(f"  {done}/{len(texts)} ({done / (time.monotonic() - started):.0f} chunks/s)")
    vectors = np.concatenate(parts).astype(np.float32)
    np.save(cache, vectors)
    return vectors


def base_vectors(paths: list[str], texts: list[str], real: int, rng: Any) -> np.ndarray:
    """A vector per base chunk: its real MiniLM vector (``real`` 0 or at least the chunks), or real
    vectors for a sample of ``real`` chunks only; each other
    chunk borrows the vector of the nearest sampled chunk of its file (else of its directory,
    else any) plus noise -- neighbouring code of one file is about the same thing."""
    count = len(texts)
    size = count if real <= 0 else min(real, count)
    sample = np.sort(rng.choice(count, size=size, replace=False))
    real_vectors = embed_texts_cached([texts[i] for i in sample])
    if size == count:  # every chunk its own real vector (the sample is every row, in order)
        return real_vectors
    vectors = np.zeros((count, real_vectors.shape[1]), dtype=np.float32)
    by_file: dict[str, list[int]] = {}
    by_dir: dict[str, list[int]] = {}
    for row, i in enumerate(sample):
        vectors[i] = real_vectors[row]
        by_file.setdefault(paths[i], []).append(int(i))
        by_dir.setdefault(paths[i].rsplit("/", 1)[0], []).append(int(i))
    sampled = set(int(i) for i in sample)
    for i in range(count):
        if i in sampled:
            continue
        pool = by_file.get(paths[i]) or by_dir.get(paths[i].rsplit("/", 1)[0])
        donor = min(pool, key=lambda j: abs(j - i)) if pool else int(rng.choice(sample))
        noisy = vectors[donor] + rng.normal(0.0, NOISE_SIGMA, vectors.shape[1])
        vectors[i] = noisy / np.linalg.norm(noisy)
    return vectors
