"""Capture what the fusion stage sees for every question of indexed corpora (learned fusion).

    .venv/bin/python bench/eval/ltr_capture.py --split tune --depth 100 \\
        --out bench/results/ltr-tune.json [--variant +sections]

Runs each question through ``SearchExecutor`` (what ``POST /api/search`` runs) with the default
settings, automatic scope and learned fusion off, once at the default list depth (its final hits are kept to check
that the offline simulation reproduces the pipeline) and once with the lists ``--depth`` deep;
from that run it keeps the ranked lists (scoped and left-out, ids and scores), the keyword
arguments the executor passed to ``place_left_out`` and ``apply_signals`` (scope decisions,
identifier...), and the facts of every listed chunk (path, lines, kind, test/doc, symbol).
``bench/eval/ltr_train.py`` fuses, trains and evaluates offline from that file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
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


def capture_corpus(name: str, queries_path: Path, depth: int, variant: str) -> dict[str, Any]:
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

    def place(fused: Any, lists: Any, left_out_lists: Any, **kwargs: Any) -> Any:
        seen["lists"], seen["left_out"] = _lists(lists), _lists(left_out_lists)
        seen["place_kwargs"] = kwargs
        return real_place(fused, lists, left_out_lists, **kwargs)

    def signals(candidates: Any, facts: Any, **kwargs: Any) -> Any:
        seen["signal_kwargs"] = {k: v for k, v in kwargs.items() if k != "top"}
        return real_signals(candidates, facts, **kwargs)

    questions = []
    ids: set[int] = set()
    executor_module.place_left_out, executor_module.apply_signals = place, signals
    try:
        for query in query_set.queries:
            # The rules' order (learned fusion off): that is what the model is trained to improve.
            base = dict(query=query.query, limit=10, repo_ids=[repo.pk])
            rules = SearchTuning(learned_fusion=False)
            default = SearchExecutor().run(SearchRequest(**base, tuning=rules))
            deep = SearchExecutor().run(
                SearchRequest(**base, tuning=replace(rules, list_depth=depth))
            )
            scope = deep.scope
            record = {
                "id": query.id,
                "query": query.query,
                "kind": query.kind,
                "expected": [[e.path, e.start_line, e.end_line] for e in query.expected],
                "default_hits": [hit.chunk_id for hit in default.hits],
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
        captured.append(capture_corpus(corpus.name, queries, args.depth, args.variant))
        print(f"{corpus.name}{args.variant}: {len(captured[-1]['questions'])} questions captured")
    Path(args.out).write_text(json.dumps({"variant": args.variant, "corpora": captured}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
