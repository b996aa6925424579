"""Chunk granularity and enrichment, measured on the labelled query set (vector retrieval only).

    .venv/bin/python bench/eval/granularity.py [--k 5] [--json bench/results/granularity.json]

The corpus (flask 3.0.3, see ``fetch_corpus.py``) is chunked in-process with the indexer's
``chunk_file`` and language/test/doc detection, then embedded with the local model under
several variants; each query is embedded once and ranked by exact cosine similarity over the
chunks in scope (tests/docs in or out as ``search.retrieval.scope`` decides for the query). The metrics
are the harness's own (``search.evaluation.metrics``). Full-text ranking does not depend on
these variants (path and symbol are already weighted fields of the tsvector), so only the
vector side is measured here. Variants:

- ``header+content``: what the embed stage embeds today (``path: ...`` / ``kind: symbol``);
- ``content``: the chunk text alone;
- ``merged<=N``: consecutive chunks of one file merged while the merged range stays within
  N lines (small functions and methods together, each keeping its own line range inside),
  with a header naming the path and every symbol merged.

No database is needed (Django settings are loaded for the model layer only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

from fetch_corpus import corpus_dir  # noqa: E402


@dataclass(frozen=True)
class Unit:
    """One retrievable unit: a chunk, or several merged."""

    path: str
    start_line: int
    end_line: int
    symbols: tuple[str, ...]
    kinds: tuple[str, ...]
    content: str
    is_test: bool
    is_doc: bool


def corpus_units(root: Path) -> list[Unit]:
    from indexing.chunking import chunk_file
    from indexing.languages import detect_language, is_doc_path, is_test_path

    units = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or ".git" in path.parts:
            continue
        data = path.read_bytes()
        if b"\0" in data[:8000] or len(data) > 1_048_576:
            continue
        rel = path.relative_to(root).as_posix()
        language = detect_language(rel, data[:512])
        text = data.decode("utf-8", errors="replace")
        for piece in chunk_file(text, language, rel):
            units.append(
                Unit(
                    rel,
                    piece.start_line,
                    piece.end_line,
                    (piece.symbol or "",),
                    (piece.kind,),
                    piece.content,
                    is_test_path(rel),
                    is_doc_path(rel, language),
                )
            )
    return units


def merge_small(units: list[Unit], max_lines: int) -> list[Unit]:
    """Merge consecutive units of a file while the merged span stays within ``max_lines``."""
    merged: list[Unit] = []
    for unit in units:
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.path == unit.path
            and unit.end_line - last.start_line + 1 <= max_lines
            and unit.start_line > last.end_line
        ):
            merged[-1] = Unit(
                last.path,
                last.start_line,
                unit.end_line,
                last.symbols + unit.symbols,
                last.kinds + unit.kinds,
                last.content + "\n" + unit.content,
                last.is_test,
                last.is_doc,
            )
        else:
            merged.append(unit)
    return merged


def header(unit: Unit) -> str:
    symbols = [s for s in unit.symbols if s]
    lines = [f"path: {unit.path}"]
    if len(symbols) == 1:
        lines.append(f"{unit.kinds[0] or 'symbol'}: {symbols[0]}")
    elif symbols:
        lines.append("symbols: " + ", ".join(symbols))
    return "\n".join(lines) + "\n"


def evaluate(
    units: list[Unit], vectors: np.ndarray, query_set: Any, query_vectors: np.ndarray, k: int
) -> dict[str, Any]:
    from search.evaluation.metrics import QueryOutcome, ResultSlot, compute_metrics
    from search.executor import SearchRequest
    from search.retrieval.scope import resolve_scope

    tests = np.array([u.is_test for u in units])
    docs = np.array([u.is_doc for u in units])
    outcomes = []
    for query, qvec in zip(query_set.queries, query_vectors, strict=True):
        scope = resolve_scope(SearchRequest(query=query.query))
        allowed = (~tests | scope.include_tests) & (~docs | scope.include_docs)
        scores = np.where(allowed, vectors @ qvec, -np.inf)
        top = np.argsort(-scores)[:k]
        slots = []
        for i in top:
            unit = units[i]
            # A merged unit holds each of its definitions whole: it names the one asked for.
            wanted = {e.symbol for e in query.expected if e.path == unit.path}
            symbol = next((s for s in unit.symbols if s in wanted), unit.symbols[0])
            slots.append(
                ResultSlot(
                    unit.path, unit.start_line, unit.end_line, symbol, unit.is_test, unit.is_doc
                )
            )
        outcomes.append(QueryOutcome(query, tuple(slots), 0.0))
    metrics = compute_metrics(outcomes, k).as_dict()
    metrics.pop("p50_ms")
    metrics.pop("p95_ms")
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--queries", type=Path, default=ROOT / "bench/eval/flask-queries.json")
    parser.add_argument("--merge", default="30,60", help="line budgets for merged variants")
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/granularity.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reposearch.settings.base")
    import django

    django.setup()
    from llm import get_embedder
    from search.evaluation.queries import load_query_set

    embedder = get_embedder()
    query_set = load_query_set(args.queries)
    units = corpus_units(corpus_dir("flask"))
    query_vectors = embedder.embed([q.query for q in query_set.queries])
    variants: dict[str, tuple[list[Unit], list[str]]] = {
        "header+content": (units, [header(u) + u.content for u in units]),
        "content": (units, [u.content for u in units]),
    }
    for budget in (int(b) for b in args.merge.split(",") if b.strip()):
        merged = merge_small(units, budget)
        variants[f"merged<={budget}"] = (merged, [header(u) + u.content for u in merged])
    report: dict[str, Any] = {"k": args.k, "queries": len(query_set.queries), "variants": {}}
    for name, (variant_units, texts) in variants.items():
        started = time.monotonic()
        vectors = embedder.embed(texts)
        metrics = evaluate(variant_units, vectors, query_set, query_vectors, args.k)
        metrics["units"] = len(variant_units)
        metrics["embed_s"] = round(time.monotonic() - started, 1)
        report["variants"][name] = metrics
        print(
            f"{name:15s} units {len(variant_units):5d}  hit@1 {metrics['hit_at_1']:.3f}"
            f"  hit@{args.k} {metrics['hit_at_k']:.3f}  recall@{args.k} {metrics['recall_at_k']:.3f}"
            f"  MRR {metrics['mrr']:.3f}  symbol-hit@{args.k} {metrics['symbol_hit_at_k'] or 0:.3f}"
            f"  ({metrics['embed_s']} s to embed)",
            flush=True,
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
