"""Paired bootstrap between two ``manage.py eval --split ... --json`` files (two index states).

    .venv/bin/python bench/eval/compare_runs.py before.json after.json [--config hybrid+scope]

``eval --compare`` pairs two configurations of one run; an index-side lever (how the tsvector
or the embedded text is built) changes the index instead, so the two states are two runs.
This pairs the runs' reciprocal ranks query by query (re-scored from the stored results
against each corpus's query set) and bootstraps MRR(after) - MRR(before) within each corpus,
with the harness's own ``paired_bootstrap``. Also prints per-corpus and per-kind MRR of both.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from search.evaluation_queries import load_query_set  # noqa: E402
from search.evaluation_stats import paired_bootstrap  # noqa: E402


def _parse_slot(text: str) -> tuple[str, int, int]:
    location = text.split(" ", 1)[0]
    path, _, lines = location.rpartition(":")
    start, _, end = lines.partition("-")
    return path, int(start), int(end)


def reciprocal_ranks(
    report: dict[str, Any], config: str
) -> dict[tuple[str, str], tuple[str, float]]:
    """(corpus, query id) -> (kind, 1/rank of the first hit within k, or 0)."""
    k = int(report["k"])
    files = {c["name"]: c["queries_file"] for c in report["corpora"]}
    out: dict[tuple[str, str], tuple[str, float]] = {}
    for corpus, ablation in report["per_corpus"].items():
        expected = {q.id: q for q in load_query_set(ROOT / files[corpus]).queries}
        found = next(c for c in ablation["configurations"] if c["name"] == config)
        for row in found["queries"]:
            query = expected[row["id"]]
            rr = 0.0
            for rank, slot in enumerate(row["results"][:k], start=1):
                if any(e.overlaps(*_parse_slot(slot)) for e in query.expected):
                    rr = 1.0 / rank
                    break
            out[(corpus, row["id"])] = (query.kind, rr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--config", default="hybrid+scope")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args(argv)
    before = reciprocal_ranks(json.loads(args.before.read_text()), args.config)
    after = reciprocal_ranks(json.loads(args.after.read_text()), args.config)
    keys = sorted(before)
    if keys != sorted(after):
        raise SystemExit("the two runs did not run the same queries")
    for label, by in (("corpus", lambda key: key[0]), ("kind", lambda key: before[key][0])):
        groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for key in keys:
            groups[by(key)].append(key)
        for name, members in sorted(groups.items()):
            a = sum(before[m][1] for m in members) / len(members)
            b = sum(after[m][1] for m in members) / len(members)
            print(
                f"{label:6s} {name:22s} n={len(members):3d}  MRR {a:.3f} -> {b:.3f}  ({b - a:+.3f})"
            )
    result = paired_bootstrap(
        [before[key][1] for key in keys],
        [after[key][1] for key in keys],
        strata=[key[0] for key in keys],
        resamples=args.resamples,
        names=(str(args.before), str(args.after)),
    )
    print(f"{args.config}: {result.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
