"""Compare two saved split reports question by question (paired bootstrap, per kind too).

    .venv/bin/python bench/eval/compare_runs.py before.json after.json --config hybrid+scope
    .venv/bin/python bench/eval/compare_runs.py a.json b.json --config hybrid --after-config hybrid+scope
    .venv/bin/python bench/eval/compare_runs.py before.json after.json --list   # which questions moved

The reports are the ``--json`` output of ``bench/eval/run.py --split ...`` on the same split and
query files (see ``bench/eval/harness/compare.py``). Exits 2 when they cannot be paired.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.eval.harness.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED  # noqa: E402
from bench.eval.harness.compare import (  # noqa: E402
    ReportMismatch,
    changed_questions,
    compare_reports,
    format_comparison,
)


def _only_split(report: dict, split: str) -> dict:
    """The report narrowed to the corpora of ``split`` (as its corpus list names them)."""
    names = {c["name"] for c in report.get("corpora", []) if c.get("split") == split}
    if not names:
        raise ReportMismatch(f"no corpus of split {split!r} in the report")
    per_corpus = {n: v for n, v in report.get("per_corpus", {}).items() if n in names}
    return {**report, "per_corpus": per_corpus}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--config", default="hybrid+scope", help="configuration in 'before'")
    parser.add_argument("--after-config", help="configuration in 'after' (default: --config)")
    parser.add_argument("--list", action="store_true", help="also list the questions that moved")
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--split", help="only the corpora of this split (tune, report)")
    args = parser.parse_args(argv)
    try:
        before = json.loads(args.before.read_text())
        after = json.loads(args.after.read_text())
        if args.split:
            before, after = (_only_split(report, args.split) for report in (before, after))
        overall, by_kind = compare_reports(
            before,
            after,
            args.config,
            after_configuration=args.after_config,
            resamples=args.resamples,
            seed=args.seed,
        )
    except (OSError, json.JSONDecodeError, ReportMismatch) as error:
        print(f"compare_runs: {error}", file=sys.stderr)
        return 2
    print(f"{args.before} -> {args.after}, k={before.get('k')}")
    print(format_comparison(overall, by_kind))
    if args.list:
        moved = changed_questions(before, after, args.config, after_configuration=args.after_config)
        print(f"\n{len(moved)} questions moved (reciprocal rank before -> after, losses first):")
        for corpus, qid, kind, old, new in moved:
            print(f"  {corpus} {qid} ({kind}): {old:.3f} -> {new:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
