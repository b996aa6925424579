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
  with a header naming the path and every symbol merged;
- ``header+doc`` / ``+class`` / ``+module`` / ``+title`` / ``+all``: the header with the
  definition's doc comment, its class's, the module's, a page's title (``doc_comments.py``);
- a second vector per documented definition (its header and doc comment's first paragraph
  alone): ``maxsim-doc`` scores a unit by the better of its two similarities, ``doc-only`` by
  the second alone (undocumented units never rank), ``rrf-doc`` fuses the two rankings as two
  lists by reciprocal rank (k = 60), as the search fuses its lists.

No database is needed (Django settings are loaded for the model layer only).
"""

from __future__ import annotations

import argparse
import hashlib
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
    doc: str = ""  # the definition's own doc comment / docstring (first paragraph)
    container_doc: str = ""  # the enclosing class's, for a method
    module_doc: str = ""  # the file's module docstring / package comment
    title: str = ""  # a documentation page's first heading
    section: str = ""  # the heading nearest above (or at) the unit's first line


def corpus_units(root: Path, *, doc_sections: bool = False) -> list[Unit]:
    from doc_comments import headings, summary

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
        pieces = chunk_file(text, language, rel, prose_sections=doc_sections)
        is_doc = is_doc_path(rel, language)
        docs = [summary(piece.content) for piece in pieces]
        class_docs: dict[str, str] = {}
        for piece, doc in zip(pieces, docs, strict=True):
            if piece.kind == "class" and piece.symbol and doc:
                class_docs.setdefault(piece.symbol, doc)
        module_doc = docs[0] if pieces and pieces[0].kind == "module" else ""
        marks = headings(text) if is_doc else []
        title = marks[0][1] if marks else ""
        for piece, doc in zip(pieces, docs, strict=True):
            container = (piece.symbol or "").rpartition(".")[0]
            above = [h for line, h in marks if line <= piece.start_line + 2]
            units.append(
                Unit(
                    rel,
                    piece.start_line,
                    piece.end_line,
                    (piece.symbol or "",),
                    (piece.kind,),
                    piece.content,
                    is_test_path(rel),
                    is_doc,
                    doc=doc,
                    container_doc=class_docs.get(container, "") if container else "",
                    module_doc=module_doc,
                    title=title,
                    section=above[-1] if above else "",
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


def header(unit: Unit, extras: frozenset[str] = frozenset()) -> str:
    symbols = [s for s in unit.symbols if s]
    lines = [f"path: {unit.path}"]
    if len(symbols) == 1:
        lines.append(f"{unit.kinds[0] or 'symbol'}: {symbols[0]}")
    elif symbols:
        lines.append("symbols: " + ", ".join(symbols))
    if "title" in extras and unit.title:
        lines.append(f"document: {unit.title}")
        if unit.section and unit.section != unit.title:
            lines.append(f"section: {unit.section}")
    if "module" in extras and unit.module_doc and unit.kinds[0] != "module":
        lines.append(f"module: {unit.module_doc[:150]}")
    if "class" in extras and unit.container_doc:
        lines.append(f"class: {unit.container_doc[:150]}")
    if "doc" in extras and unit.doc:
        lines.append(f"doc: {unit.doc}")
    return "\n".join(lines) + "\n"


# Variants scored with a second vector per documented definition, and how the two combine.
SECOND_VECTOR = {"maxsim-doc": "max", "doc-only": "second", "rrf-doc": "rrf"}

HEADER_VARIANTS = {
    "header+doc": frozenset({"doc"}),
    "header+class": frozenset({"class"}),
    "header+module": frozenset({"module"}),
    "header+title": frozenset({"title"}),
    "header+all": frozenset({"doc", "class", "module", "title"}),
}


def evaluate(
    units: list[Unit],
    vectors: np.ndarray,
    query_set: Any,
    query_vectors: np.ndarray,
    k: int,
    second: np.ndarray | None = None,
    combine: str = "max",
) -> dict[str, Any]:
    """Metrics of exact cosine ranking; with ``second`` (one more vector per unit, zero where
    a unit has none) a unit scores the better of its two similarities (``combine="max"``), is
    ranked by the second alone (``"second"``: units without one never rank), or the two rankings
    are fused as two lists by reciprocal rank, k = 60, as the search fuses its lists (``"rrf"``).
    """
    from search.evaluation.metrics import QueryOutcome, ResultSlot, compute_metrics
    from search.executor import SearchRequest
    from search.retrieval.scope import resolve_scope

    tests = np.array([u.is_test for u in units])
    docs = np.array([u.is_doc for u in units])
    outcomes = []
    for query, qvec in zip(query_set.queries, query_vectors, strict=True):
        scope = resolve_scope(SearchRequest(query=query.query))
        allowed = (~tests | scope.include_tests) & (~docs | scope.include_docs)
        similarity = vectors @ qvec
        if second is not None:
            has_second = second.any(axis=1)
            other = np.where(has_second, second @ qvec, -np.inf)
            if combine == "max":
                similarity = np.maximum(similarity, other)
            elif combine == "second":
                similarity = other
            else:  # "rrf": each list ranks the units it holds that the scope allows
                similarity = _rrf(
                    np.where(allowed, similarity, -np.inf), np.where(allowed, other, -np.inf)
                )
        scores = np.where(allowed, similarity, -np.inf)
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


def _rrf(*lists: np.ndarray, k: int = 60) -> np.ndarray:
    """Reciprocal-rank fusion of score arrays over the same units (-inf: not in that list)."""
    fused = np.zeros(len(lists[0]))
    for scores in lists:
        order = np.argsort(-scores, kind="stable")
        ranks = np.empty(len(order), dtype=np.int64)
        ranks[order] = np.arange(1, len(order) + 1)
        fused += np.where(np.isfinite(scores), 1.0 / (k + ranks), 0.0)
    return np.where(fused > 0, fused, -np.inf)


class CachedEmbedder:
    """The local embedder with a disk cache keyed by text (variants share most texts)."""

    def __init__(self, embedder: Any, path: Path) -> None:
        self.embedder = embedder
        self.path = path
        self.vectors: dict[str, np.ndarray] = {}
        if path.exists():
            with np.load(path) as data:
                self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    @classmethod
    def in_folder(cls, embedder: Any, folder: Path) -> CachedEmbedder:
        """``embedder`` cached in ``folder``, one file per embedding space."""
        return cls(embedder, folder / (embedder.space_key.replace("/", "_") + ".npz"))

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}
        if todo:
            fresh = self.embedder.embed(list(todo.values()))
            self.vectors.update(zip(todo, fresh, strict=True))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(
                self.path,
                keys=np.array(list(self.vectors)),
                vectors=np.stack(list(self.vectors.values())),
            )
        return np.stack([self.vectors[k] for k in keys])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--queries", type=Path, default=ROOT / "bench/eval/flask-queries.json")
    parser.add_argument("--corpus", type=Path, help="the corpus tree (default: flask 3.0.3)")
    parser.add_argument("--merge", default="30,60", help="line budgets for merged variants")
    parser.add_argument(
        "--variants",
        default="",
        help="comma-separated subset, e.g. header+content,header+doc (default: all)",
    )
    parser.add_argument("--json", type=Path, default=ROOT / "bench/results/granularity.json")
    parser.add_argument(
        "--doc-sections", action="store_true", help="chunk Markdown/rst pages by section"
    )
    parser.add_argument(
        "--mpnet",
        type=Path,
        help="embed with all-mpnet-base-v2 from this folder (bench/eval/mpnet_runtime.py)",
    )
    parser.add_argument(
        "--cache", type=Path, default=ROOT / "bench/results/granularity-cache", help="vector cache"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reposearch.settings.base")
    import django

    django.setup()
    from llm import get_embedder
    from search.evaluation.queries import load_query_set

    base = get_embedder()
    if args.mpnet:
        from mpnet_runtime import MPNetEmbedder, prepare

        base = MPNetEmbedder(prepare(args.mpnet))
    embedder = CachedEmbedder.in_folder(base, args.cache)
    query_set = load_query_set(args.queries)
    units = corpus_units(args.corpus or corpus_dir("flask"), doc_sections=args.doc_sections)
    query_vectors = embedder.embed([q.query for q in query_set.queries])
    variants: dict[str, Any] = {
        "header+content": lambda: (units, [header(u) + u.content for u in units]),
        "content": lambda: (units, [u.content for u in units]),
    }
    for name, extras in HEADER_VARIANTS.items():
        variants[name] = lambda extras=extras: (
            units,
            [header(u, extras) + u.content for u in units],
        )
    # Scored with a second vector per documented definition (its header and doc comment alone):
    # the better of the two, that one alone, or the two rankings fused as two lists.
    for name in SECOND_VECTOR:
        variants[name] = variants["header+content"]
    for budget in (int(b) for b in args.merge.split(",") if b.strip()):
        variants[f"merged<={budget}"] = lambda budget=budget: (
            merge_small(units, budget),
            [header(u) + u.content for u in merge_small(units, budget)],
        )
    wanted = [v.strip() for v in args.variants.split(",") if v.strip()] or list(variants)
    unknown = sorted(set(wanted) - set(variants))
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(variants)}")
    report: dict[str, Any] = {"k": args.k, "queries": len(query_set.queries), "variants": {}}
    for name in wanted:
        second = None
        variant_units, texts = variants[name]()
        started = time.monotonic()
        vectors = embedder.embed(texts)
        if name in SECOND_VECTOR:
            # A second vector per documented definition: its header and doc comment alone.
            second = np.zeros_like(vectors)
            documented = [i for i, u in enumerate(variant_units) if u.doc]
            if documented:
                docs = [header(variant_units[i]) + variant_units[i].doc for i in documented]
                second[documented] = embedder.embed(docs)
        metrics = evaluate(
            variant_units, vectors, query_set, query_vectors, args.k, second,
            combine=SECOND_VECTOR.get(name, "max"),
        )  # fmt: skip
        metrics["units"] = len(variant_units)
        metrics["embed_s"] = round(time.monotonic() - started, 1)
        report["variants"][name] = metrics
        kinds = "  ".join(
            f"{kind} {values['mrr']:.3f}" for kind, values in sorted(metrics["by_kind"].items())
        )
        print(
            f"{name:15s} units {len(variant_units):5d}  hit@1 {metrics['hit_at_1']:.3f}"
            f"  hit@{args.k} {metrics['hit_at_k']:.3f}  recall@{args.k} {metrics['recall_at_k']:.3f}"
            f"  MRR {metrics['mrr']:.3f}  symbol-hit@{args.k} {metrics['symbol_hit_at_k'] or 0:.3f}"
            f"  ({metrics['embed_s']} s to embed)\n    MRR by kind: {kinds}",
            flush=True,
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
