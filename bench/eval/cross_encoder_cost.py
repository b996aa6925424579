"""What the cross-encoder stage costs per search at two or more token lengths, interleaved.

    .venv/bin/python bench/eval/cross_encoder_cost.py \\
        --corpus marshmallow-3.21.3=bench/eval/marshmallow-queries.json [--corpus ...] \\
        [--tokens 256,128] [--top 10] [--json cost.json]

Every question of the query sets is searched through ``SearchExecutor`` (what
``POST /api/search`` runs, default settings) once per token length, the lengths taken in turn and
their order rotated from one question to the next, so a busy machine weighs on each alike. The
cross-encoder's score cache is emptied before each search and its budget lifted, so every search
scores its best ``--top`` candidates. Prints, per length, the stage's and the whole search's
p50 / p95 in ms over the searches where the stage ran (a lone identifier skips it). Quality is
``levers.py``'s (``ce w0.3 top10 t128``...). The corpora must be indexed and embedded already
(``bench/eval/index_corpus.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", action="append", required=True, help="NAME=QUERIES.json")
    parser.add_argument("--tokens", default="256,128", help="comma-separated lengths to compare")
    parser.add_argument("--top", type=int, default=10, help="candidates scored (default 10)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    lengths = [int(value) for value in args.tokens.split(",") if value.strip()]
    os.chdir(ROOT)
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from bench.eval.harness.ablation import Configuration, build_request
    from bench.eval.harness.queries import load_query_set
    from indexing.models import Repository
    from search.executor import SearchExecutor
    from search.ranking.cross_encoder import clear_cache

    executor = SearchExecutor()
    stage_ms: dict[int, list[float]] = {n: [] for n in lengths}
    search_ms: dict[int, list[float]] = {n: [] for n in lengths}
    turn = 0
    for spec in args.corpus:
        name, _, queries_path = spec.partition("=")
        repo_id = Repository.objects.get(name=name).pk
        for query in load_query_set(Path(queries_path)).queries:
            order = lengths[turn % len(lengths) :] + lengths[: turn % len(lengths)]
            turn += 1
            for tokens in order:
                overrides: dict[str, Any] = {
                    "include_tests": None,
                    "include_docs": None,
                    "cross_encoder": True,
                    "cross_encoder_tokens": tokens,
                    "cross_encoder_top": args.top,
                    "cross_encoder_budget_s": 600.0,
                }
                request = build_request(
                    query.query, Configuration("cost", overrides), k=10, repo_ids=[repo_id]
                )
                clear_cache()
                started = time.perf_counter()
                result = executor.run(request)
                elapsed = (time.perf_counter() - started) * 1000
                stage = result.stage("cross_encoder")
                if stage is not None and stage.status == "ran":
                    stage_ms[tokens].append(stage.ms)
                    search_ms[tokens].append(elapsed)
    figures: dict[str, Any] = {}
    print(f"cross-encoder, best {args.top}: p50 / p95 in ms over the searches it ran in")
    print("| tokens | searches | stage p50 / p95 | search p50 / p95 |\n|---|---|---|---|")
    for tokens in lengths:
        stages, searches = stage_ms[tokens], search_ms[tokens]
        if not stages:
            print(f"| {tokens} | 0 | | |")
            continue
        row = {
            "searches": len(stages),
            "stage_p50_ms": percentile(stages, 50),
            "stage_p95_ms": percentile(stages, 95),
            "search_p50_ms": percentile(searches, 50),
            "search_p95_ms": percentile(searches, 95),
        }
        figures[str(tokens)] = row
        print(
            f"| {tokens} | {row['searches']} | {row['stage_p50_ms']:.0f} / "
            f"{row['stage_p95_ms']:.0f} | {row['search_p50_ms']:.0f} / {row['search_p95_ms']:.0f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
