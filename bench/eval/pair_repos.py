"""MRR@10 of two indexed repositories on one query set, paired question by question.

    .venv/bin/python bench/eval/pair_repos.py QUERIES.json REPO_A REPO_B [LEVER_A [LEVER_B]]

Levers are named as in ``levers.py`` (default: ``defaults``). Prints the mean difference with its
95 % paired bootstrap interval (2,000 resamples, seed 16), MRR per kind, and the questions that
moved (see ``index_variant.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def main(argv: list[str]) -> int:
    queries_path, repo_a, repo_b = argv[:3]
    lever_a = argv[3] if len(argv) > 3 else "defaults"
    lever_b = argv[4] if len(argv) > 4 else lever_a
    os.chdir(ROOT)
    from reposearch.startup import load_settings_or_exit

    load_settings_or_exit()
    import django

    django.setup()
    from levers import LEVERS, paired_interval, reciprocal_ranks

    from indexing.models import Repository
    from search.evaluation.queries import load_query_set

    query_set = load_query_set(Path(queries_path))
    a = reciprocal_ranks(query_set, Repository.objects.get(name=repo_a).pk, *LEVERS[lever_a])
    b = reciprocal_ranks(query_set, Repository.objects.get(name=repo_b).pk, *LEVERS[lever_b])
    difference, low, high = paired_interval(a, b)
    print(
        f"{repo_a} [{lever_a}] {_mean(a):.3f} -> {repo_b} [{lever_b}] {_mean(b):.3f}:"
        f" {difference:+.3f} [{low:+.3f}, {high:+.3f}]"
    )
    queries = query_set.queries
    for kind in sorted({q.kind for q in queries}):
        before = [x for x, q in zip(a, queries, strict=True) if q.kind == kind]
        after = [y for y, q in zip(b, queries, strict=True) if q.kind == kind]
        print(f"  {kind}: {_mean(before):.3f} -> {_mean(after):.3f}")
    for x, y, q in zip(a, b, queries, strict=True):
        if abs(x - y) > 1e-9:
            print(f"    {q.kind} {x:.2f} -> {y:.2f}  {q.query[:90]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
