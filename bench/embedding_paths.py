"""The default encoder's path as the embed stage drives it, before and after 4a6e12c: the
former padded runtime (``bench/minilm_legacy.py``, 32 texts a call in chunk order) against the
packed one (a page's texts sorted by length, 32 a call, as ``indexing.services.vectors`` calls
it), on real chunks and on 256-token windows. Run from ``bench/embedding_runtime.py``: the two
paths alternate, each round in fresh subprocesses (load moves while a benchmark runs on shared
cores); reported are the best rate of each, the ratio of the bests, the range of the rounds'
ratios and the cosine of the new vectors to the old.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BATCH = 32


def time_best(fn, texts: list[str], repeats: int) -> float:  # type: ignore[no-untyped-def]
    """Chunks/s of ``fn(texts)``: the best of ``repeats`` runs after a warm-up."""
    fn(texts[:BATCH])  # warm-up: weights loaded, pools started, compiled loops loaded
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(texts)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def real_chunks(count: int, source: Path | None = None) -> list[str]:
    """``count`` chunks of this repository (or of every file under ``source``), evenly spaced
    in file order, exactly as the embed stage embeds them (the project's chunker,
    ``embedded_text``'s header)."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reposearch.settings.base")
    import django

    django.setup()
    from indexing.chunking import chunk_file
    from indexing.languages import detect_language
    from indexing.models import Chunk
    from indexing.services.vectors import embedded_text

    if source is None:
        source = ROOT
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True
        ).stdout.split()
    else:
        listed = sorted(str(p.relative_to(source)) for p in source.rglob("*") if p.is_file())
        listed = [rel for rel in listed if "__pycache__" not in rel]
    texts: list[str] = []
    for rel in listed:
        path, language = source / rel, detect_language(rel)
        if language is None or not path.is_file() or path.stat().st_size > 1_000_000:
            continue
        for piece in chunk_file(
            path.read_text(errors="replace"), language, rel, prose_sections=True
        ):
            chunk = Chunk(
                path=rel, symbol=piece.symbol or "", kind=piece.kind, content=piece.content
            )
            texts.append(embedded_text(chunk))
    step = max(1, len(texts) // max(count, 1))
    return texts[::step][:count]


def worker_padded(texts: list[str], repeats: int, vectors_file: str) -> float:
    """The former runtime as the embed stage drove it: 32 texts a call, in chunk order."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from bench.minilm_legacy import PaddedMiniLMRuntime, embed_texts_padded

    runtime = PaddedMiniLMRuntime()

    def embed(batch: list[str]) -> np.ndarray:
        calls = range(0, len(batch), BATCH)
        return np.concatenate([embed_texts_padded(runtime, batch[i : i + BATCH]) for i in calls])

    np.save(vectors_file, embed(texts))
    return time_best(embed, texts, repeats)


def worker_packed(texts: list[str], repeats: int, vectors_file: str) -> float:
    """The product: a page's texts longest first, 32 a call (``indexing.services.vectors``)."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from llm.local_embedding import embed_texts

    def embed(batch: list[str]) -> np.ndarray:
        order = sorted(range(len(batch)), key=lambda i: -len(batch[i]))
        out = np.zeros((len(batch), 384), np.float32)
        for i in range(0, len(order), BATCH):
            rows = order[i : i + BATCH]
            out[rows] = embed_texts([batch[r] for r in rows], batch_size=BATCH)
        return out

    np.save(vectors_file, embed(texts))
    return time_best(embed, texts, repeats)


RunWorker = Callable[[str, str, int, str], float]  # (worker, texts file, repeats, arg) -> rate


def compare_paths(sets: dict[str, list[str]], rounds: int, run: RunWorker) -> None:
    """Print, per chunk set, the padded and packed paths' rates and the new vectors' cosine."""
    import numpy as np

    print("\ndefault encoder (MiniLM), embed stage's path: old = padded batches of 32 in chunk")
    print("order, new = packed, texts sorted by length; rounds alternate old/new in subprocesses")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    header = f"{'chunk set':34s} {'old /s':>7s} {'new /s':>7s} {'x best':>7s} {'x rounds':>11s}"
    print(header + "  cosine new-old min / mean")
    for label, texts in sets.items():
        with tempfile.TemporaryDirectory() as tmp:
            texts_file = str(Path(tmp) / "texts.json")
            Path(texts_file).write_text(json.dumps(texts))
            old_rates, new_rates = [], []
            for _ in range(rounds):
                old_rates.append(run("padded", texts_file, 2, str(Path(tmp) / "old.npy")))
                new_rates.append(run("packed", texts_file, 2, str(Path(tmp) / "new.npy")))
            old, new = np.load(Path(tmp) / "old.npy"), np.load(Path(tmp) / "new.npy")
        cosine = (old * new).sum(axis=1)
        ratios = [n / o for o, n in zip(old_rates, new_rates, strict=True)]
        best = max(new_rates) / max(old_rates)
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        print(
            f"{label:34s} {max(old_rates):7.1f} {max(new_rates):7.1f} {best:7.2f} {spread:>11s}"
            f"  {cosine.min():.6f} / {cosine.mean():.6f}"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def chunk_sets(
    real_count: int, windows: list[str], source: Path | None = None
) -> dict[str, list[str]]:
    texts = real_chunks(real_count, source)
    where = f"of {source.name}" if source else "of this repository"
    return {f"{len(texts)} real chunks {where}": texts,
            f"{len(windows)} windows of 256+ tokens": windows}  # fmt: skip
