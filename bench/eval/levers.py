"""Ranking levers, each measured against the current defaults on indexed evaluation corpora.

    .venv/bin/python bench/eval/levers.py --corpus flask-3.0.3=bench/eval/flask-queries.json \\
        --corpus gorilla-mux-1.8.0=bench/eval/gorilla-mux-queries.json [--levers intent,k1]

Every lever is a set of ``SearchRequest`` overrides (nothing is patched: BM25's parameters are
the index's, ``indexing.bm25``), run through the same ``SearchExecutor`` as
``POST /api/search`` with the default (automatic) scope and k = 10. For
each corpus it prints MRR@10 overall and per query kind, and the paired difference against
the defaults with a 95 % paired bootstrap interval (``bench.eval.harness.bootstrap``, 2,000
resamples, seed 16; pooled over several corpora, resampled within each corpus). Tune only on
tuning-split corpora (``docs/benchmarks.md``). ``--json`` also writes every figure.

The corpora must be indexed and embedded already (``bench/eval/index_corpus.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

K = 10


def _cross_encoder(weight: float, top: int, tokens: int) -> dict[str, Any]:
    return {
        "cross_encoder": True,
        "cross_encoder_weight": weight,
        "cross_encoder_top": top,
        "cross_encoder_tokens": tokens,
        "cross_encoder_budget_s": 60.0,
    }


# name -> SearchRequest overrides. Levers measured and not adopted left the product with their
# fields (issue 30; their rounds are in the history of docs/evaluation.md and this file).
LEVERS: dict[str, dict[str, Any]] = {
    "defaults": {},
    # issue 31: the local cross-encoder (search/ranking/cross_encoder.py), with no time limit
    "no cross-encoder": {"cross_encoder": False},
    "ce top15": _cross_encoder(0.3, 15, 256),
    **{
        f"ce w{w} top{top} t{tokens}": _cross_encoder(w, top, tokens)
        for w in (0.3, 0.5, 0.7, 1.0)
        for top in (5, 10, 20, 30)
        for tokens in (128, 256)
    },
    "no intent": {"intent_boost": 0.0},
    "intent 0.25": {"intent_boost": 0.25},
    "intent 0.5": {"intent_boost": 0.5},
    "no usage docs": {"docs_for_usage_questions": False},
    "none (before)": {
        "intent_boost": 0.0,
        "docs_for_usage_questions": False,
        "exact_symbol_boost": 0.0,
    },
    "no exact name": {"exact_symbol_boost": 0.0},
    "rrf k 5": {"rrf_k": 5},
    "rrf k 10": {"rrf_k": 10},
    "rrf k 20": {"rrf_k": 20},
    "rrf k 30": {"rrf_k": 30},
    "rrf k 100": {"rrf_k": 100},
    "first bonus 0": {"first_rank_bonus": 0.0},
    "first bonus 0.02": {"first_rank_bonus": 0.02},
    "rrf k 10 bonus 0": {"rrf_k": 10, "first_rank_bonus": 0.0},
    "rrf k 20 bonus 0": {"rrf_k": 20, "first_rank_bonus": 0.0},
    "depth 30": {"list_depth": 30},
    "depth 100": {"list_depth": 100},
    "all-words boost 0": {"all_terms_boost": 0.0},
    "all-words boost 0.5": {"all_terms_boost": 0.5},
    "all-words boost 1.0": {"all_terms_boost": 1.0},
    # issue 16, second round (search/ranking/fusion.py, place_left_out)
    "left-out 0": {"left_out_weight": 0.0},
    "left-out 0.3": {"left_out_weight": 0.3},
    "left-out 0.7": {"left_out_weight": 0.7},
    "left-out 1.0": {"left_out_weight": 1.0},
    # issue 16, fourth round (search/ranking/ordering.py)
    "learned": {"learned_fusion": True},
    "rules": {"learned_fusion": False},
}


def reciprocal_ranks(query_set: Any, repo_id: Any, overrides: dict[str, Any]) -> list[float]:
    from bench.eval.harness.ablation import Configuration, run_configuration
    from bench.eval.harness.metrics import first_hit_rank
    from search.executor import SearchExecutor

    configuration = Configuration(
        "lever", {"include_tests": None, "include_docs": None, **overrides}
    )
    report = run_configuration(
        configuration, query_set, k=K, repo_ids=[repo_id], search=SearchExecutor().run
    )
    ranks = [first_hit_rank(outcome, K) for outcome in report.outcomes]
    return [1.0 / rank if rank else 0.0 for rank in ranks]


def paired_interval(
    base: list[float], other: list[float], strata: list[str] | None = None
) -> tuple[float, float, float]:
    """Mean difference (other - base) and its 95 % interval: the harness's paired bootstrap
    (``bench.eval.harness.bootstrap``; within each corpus when pooled), 2,000 resamples, seed 16."""
    from bench.eval.harness.bootstrap import paired_bootstrap

    found = paired_bootstrap(base, other, strata=strata, resamples=2000, seed=16)
    return found.difference, found.low, found.high


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", action="append", required=True, help="NAME=QUERIES.json")
    parser.add_argument("--levers", default="", help="comma-separated subset (default: all)")
    parser.add_argument("--json", type=Path, help="also write every lever's figures here")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from bench.eval.harness.queries import load_query_set
    from indexing.models import Repository

    chosen = [name.strip() for name in args.levers.split(",") if name.strip()] or list(LEVERS)
    unknown = [name for name in chosen if name not in LEVERS]
    if unknown:
        parser.error(f"unknown lever(s) {unknown}; known: {', '.join(LEVERS)}")
    if "defaults" not in chosen:
        chosen.insert(0, "defaults")
    out: Callable[[str], None] = print
    pooled: dict[str, list[float]] = {lever: [] for lever in chosen}
    strata: list[str] = []
    pooled_kinds: list[str] = []
    figures: dict[str, dict[str, dict[str, float]]] = {}  # corpus or "pooled" -> lever -> ...
    for spec in args.corpus:
        name, _, queries_path = spec.partition("=")
        query_set = load_query_set(Path(queries_path))
        repo_id = Repository.objects.get(name=name).pk
        kinds = sorted({q.kind for q in query_set.queries})
        strata += [name] * len(query_set.queries)
        pooled_kinds += [q.kind for q in query_set.queries]
        out(f"\n{name}: {len(query_set.queries)} queries, MRR@{K}")
        out("| lever | MRR | diff [95 % CI] | " + " | ".join(kinds) + " |")
        out("|" + "---|" * (len(kinds) + 3))
        base: list[float] = []
        figures[name] = {}
        for lever in chosen:
            rr = reciprocal_ranks(query_set, repo_id, LEVERS[lever])
            pooled[lever] += rr
            figures[name][lever] = {"mrr": _mean(rr)}
            if lever == "defaults":
                base = rr
                diff = ""
            else:
                mean, low, high = paired_interval(base, rr)
                diff = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
                figures[name][lever].update(difference=mean, low=low, high=high)
            per_kind = [
                _mean([r for r, q in zip(rr, query_set.queries, strict=True) if q.kind == kind])
                for kind in kinds
            ]
            cells = " | ".join(f"{value:.3f}" for value in per_kind)
            out(f"| {lever} | {_mean(rr):.3f} | {diff} | {cells} |")
    if len(args.corpus) > 1:
        total = len(pooled["defaults"])
        out(f"\npooled over {len(args.corpus)} corpora ({total} queries), MRR@{K}")
        out("| lever | MRR | diff [95 % CI] |\n|---|---|---|")
        figures["pooled"] = {}
        for lever in chosen:
            rr = pooled[lever]
            diff = ""
            figures["pooled"][lever] = {"mrr": _mean(rr)}
            if lever != "defaults":
                mean, low, high = paired_interval(pooled["defaults"], rr, strata)
                diff = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
                figures["pooled"][lever].update(difference=mean, low=low, high=high)
            out(f"| {lever} | {_mean(rr):.3f} | {diff} |")
        kinds = sorted(set(pooled_kinds))
        out("\nper kind, pooled: lever - defaults [95 % CI]")
        out("| lever | " + " | ".join(kinds) + " |\n|" + "---|" * (len(kinds) + 1))
        for lever in chosen[1:]:
            cells = []
            for kind in kinds:
                chosen_rows = [i for i, k in enumerate(pooled_kinds) if k == kind]
                mean, low, high = paired_interval(
                    [pooled["defaults"][i] for i in chosen_rows],
                    [pooled[lever][i] for i in chosen_rows],
                    [strata[i] for i in chosen_rows],
                )
                cells.append(f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]")
            out(f"| {lever} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps({"k": K, "figures": figures}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
