"""Capture what the fusion stage sees for every question of indexed corpora (learned fusion).

    .venv/bin/python bench/eval/ltr_capture.py --split tune --depth 100 \\
        --out bench/results/ltr-tune.json [--variant +sections]

Runs each question through ``SearchExecutor`` (what ``POST /api/search`` runs) twice:

- **live**: the default settings, exactly as served (learned fusion and the cross-encoder as
  configured): its final hits, the learned order the fusion stage handed on (``live_order``,
  before the cross-encoder) and that order's input pool are kept, so ``ltr_train.py`` can check
  that its replay reproduces the pipeline; and the cross-encoder's logit for every candidate of
  that pool (``cross_encoder``; ``--no-cross-encoder`` leaves them out), so the replay can
  reorder any model's best 10 as the live stack would;
- **rules**: learned fusion and the cross-encoder off, the lists ``--depth`` deep: the ranked
  lists (scoped and left-out, ids and scores), the keyword arguments the executor passed to
  ``place_left_out`` and ``apply_signals`` (scope decisions, identifier...).

and keeps the facts of every listed chunk (path, lines, kind, test/doc, symbol).
``bench/eval/ltr_train.py`` fuses, trains and evaluates offline from that file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

from fetch_corpus import MANIFEST  # noqa: E402


def _lists(lists: Any) -> list[dict[str, Any]]:
    return [
        {"method": rl.method, "query_index": rl.query_index, "ranked": [list(p) for p in rl.ranked]}
        for rl in lists
    ]


def _cross_encoder_logits(query: str, chunk_ids: list[int], tuning: Any) -> dict[str, float]:
    """The cross-encoder's logit for each chunk, read as the live stage reads it (path, symbol,
    text; the same token budget), without a time budget."""
    from llm import get_reranker
    from search.ranking.cross_encoder import Passage, cross_encode, passage_text, passage_tokens
    from search.retrieval.hydrate import hydrate_hits
    from search.types import FusedCandidate

    hits = hydrate_hits([FusedCandidate(chunk_id=cid, score=0.0) for cid in chunk_ids])
    passages = [
        Passage(cid, passage_text(hits[cid].file_path, hits[cid].symbol, hits[cid].content))
        for cid in chunk_ids
        if cid in hits
    ]
    model = get_reranker()
    outcome = cross_encode(
        model,
        query,
        passages,
        budget_s=float("inf"),
        max_tokens=passage_tokens(tuning, model),
        weight=tuning.cross_encoder_weight,
    )
    return {str(cid): round(score, 6) for cid, score in outcome.scores.items()}


def _stage(result: Any, name: str) -> dict[str, Any]:
    for stage in result.trace:
        if stage.name == name:
            kept = {k: v for k, v in stage.detail.items() if k in ("candidates", "scored", "moved")}
            return {"status": stage.status, **kept}
    return {}


def capture_corpus(
    name: str, queries_path: Path, depth: int, variant: str, cross_encoder: bool = True
) -> dict[str, Any]:
    from django.db import connection

    import search.executor as executor_module
    from bench.eval.harness.queries import load_query_set
    from indexing.models import Repository
    from search.executor import SearchExecutor
    from search.types import SearchRequest, SearchTuning

    repo = Repository.objects.get(name=name + variant)
    query_set = load_query_set(queries_path)
    seen: dict[str, Any] = {}
    real_place, real_signals = executor_module.place_left_out, executor_module.apply_signals
    real_learned = executor_module.learned_order

    def place(fused: Any, lists: Any, left_out_lists: Any, **kwargs: Any) -> Any:
        seen["lists"], seen["left_out"] = _lists(lists), _lists(left_out_lists)
        seen["place_kwargs"] = kwargs
        return real_place(fused, lists, left_out_lists, **kwargs)

    def signals(candidates: Any, facts: Any, **kwargs: Any) -> Any:
        seen["signal_kwargs"] = {k: v for k, v in kwargs.items() if k != "top"}
        return real_signals(candidates, facts, **kwargs)

    def learned(pool: Any, lists: Any, facts: Any, shape: Any, **kwargs: Any) -> Any:
        seen["live_pool"] = [c.chunk_id for c in pool if c.chunk_id in facts]
        ordered = real_learned(pool, lists, facts, shape, **kwargs)
        seen["live_order"] = [c.chunk_id for c in ordered]
        return ordered

    questions = []
    ids: set[int] = set()
    executor_module.place_left_out, executor_module.apply_signals = place, signals
    executor_module.learned_order = learned
    try:
        for query in query_set.queries:
            base = dict(query=query.query, limit=10, repo_ids=[repo.pk])
            seen.pop("live_order", None)
            seen.pop("live_pool", None)
            live_request = SearchRequest(**base)
            live = SearchExecutor().run(live_request)
            live_order, live_pool = seen.get("live_order"), seen.get("live_pool", [])
            reordered = _stage(live, "cross_encoder")
            # The rules' pool (learned fusion off) is what the model orders; the lists deep.
            rules = SearchTuning(learned_fusion=False, list_depth=depth)
            deep = SearchExecutor().run(SearchRequest(**base, tuning=rules, cross_encoder=False))
            scope = deep.scope
            record = {
                "id": query.id,
                "query": query.query,
                "kind": query.kind,
                "expected": [[e.path, e.start_line, e.end_line] for e in query.expected],
                "live_hits": [hit.chunk_id for hit in live.hits],
                "live_order": live_order,  # None: learned fusion is off in these settings
                "live_pool": live_pool,
                "live_cross_encoder": reordered,
                "cross_encoder": (  # only where the stage ran live: the replay reorders those
                    _cross_encoder_logits(query.query, live_pool, live_request.tuning)
                    if cross_encoder and live_pool and reordered.get("status") == "ran"
                    else {}
                ),
                "scope": {
                    "include_tests": scope.include_tests,
                    "include_docs": scope.include_docs,
                    "tests_reason": scope.tests_reason,
                    "docs_reason": scope.docs_reason,
                    "prefer_tests": scope.prefer_tests,
                    "prefer_docs": scope.prefer_docs,
                },
                **{
                    key: seen[key] for key in ("lists", "left_out", "place_kwargs", "signal_kwargs")
                },
            }
            record["place_kwargs"]["depth"] = depth
            for rl in [*record["lists"], *record["left_out"]]:
                ids.update(int(cid) for cid, _ in rl["ranked"])
            questions.append(record)
    finally:
        executor_module.place_left_out, executor_module.apply_signals = real_place, real_signals
        executor_module.learned_order = real_learned
    chunks: dict[str, Any] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, path, start_line, end_line, is_test, is_doc, symbol, kind, language"
            " FROM indexing_chunk WHERE id = ANY(%s)",
            [sorted(ids)],
        )
        for cid, path, start, end, is_test, is_doc, symbol, kind, language in cursor.fetchall():
            chunks[str(cid)] = {
                "path": path,
                "start_line": start,
                "end_line": end,
                "is_test": is_test,
                "is_doc": is_doc,
                "symbol": symbol or "",
                "kind": kind or "",
                "language": language or "",
            }
    return {
        "corpus": name,
        "repository": str(repo.pk),
        "depth": depth,
        "questions": questions,
        "chunks": chunks,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("tune", "report", "all"), default="tune")
    parser.add_argument("--corpus", action="append", default=[], help="NAME (default: the split)")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--variant", default="", help="repository name suffix (+sections)")
    parser.add_argument(
        "--no-cross-encoder",
        action="store_true",
        help="do not score the live pool with the cross-encoder (faster; no reorder replayed)",
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="corpora manifest")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from bench.eval.harness.corpora import load_manifest

    manifest = load_manifest(args.manifest)
    corpora = [c for c in manifest if args.split == "all" or c.split == args.split]
    if args.corpus:
        corpora = [c for c in manifest if c.name in args.corpus]
    captured = []
    for corpus in corpora:
        queries = ROOT / corpus.queries
        captured.append(
            capture_corpus(
                corpus.name, queries, args.depth, args.variant, not args.no_cross_encoder
            )
        )
        print(f"{corpus.name}{args.variant}: {len(captured[-1]['questions'])} questions captured")
    Path(args.out).write_text(json.dumps({"variant": args.variant, "corpora": captured}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
