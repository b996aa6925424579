"""Compare two saved split reports (``bench/eval/run.py --split ... --json``) question by question.

A lever that changes the index or the code (field weights, an embedding model, a ranking rule)
cannot be run beside the old behaviour in one process; it is judged by running the split before
and after and pairing the two reports' reciprocal ranks for the same (corpus, question)::

    bench/eval/run.py --split tune --json before.json       # on the old code / index
    bench/eval/run.py --split tune --baseline before.json   # on the new: prints the intervals
    .venv/bin/python bench/eval/compare_runs.py before.json after.json --config hybrid+scope

Both reports must cover the same questions at the same k (a changed query file cannot be
paired). Pure functions over the decoded JSON; no Django, no database.
"""

from __future__ import annotations

from typing import Any

from bench.eval.harness.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    PairedDifference,
    paired_bootstrap,
)

Key = tuple[str, str]  # (corpus, question id)


class ReportMismatch(ValueError):
    """The two reports cannot be paired (the message says why)."""


def reciprocal_ranks(report: dict[str, Any], configuration: str) -> dict[Key, tuple[str, float]]:
    """(corpus, question id) -> (kind, reciprocal rank) of one configuration in a split report."""
    per_corpus = report.get("per_corpus")
    if not isinstance(per_corpus, dict) or not per_corpus:
        raise ReportMismatch("not a split report (no 'per_corpus'): write it with eval --split")
    scores: dict[Key, tuple[str, float]] = {}
    for corpus, ablation in per_corpus.items():
        found = next(
            (c for c in ablation.get("configurations", []) if c.get("name") == configuration),
            None,
        )
        if found is None or found.get("metrics") is None:
            reason = (found or {}).get("skipped") or "not in the report"
            raise ReportMismatch(f"{configuration} did not run on {corpus}: {reason}")
        for query in found.get("queries", []):
            if "rank" not in query:
                raise ReportMismatch("the report has no per-question ranks: rerun it")
            rank = query["rank"]
            scores[(corpus, str(query["id"]))] = (str(query["kind"]), 1.0 / rank if rank else 0.0)
    return scores


def compare_reports(
    before: dict[str, Any],
    after: dict[str, Any],
    configuration: str,
    *,
    after_configuration: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[PairedDifference, dict[str, PairedDifference]]:
    """MRR(after) - MRR(before) with its interval, overall and per kind (stratified by corpus)."""
    if before.get("k") != after.get("k"):
        raise ReportMismatch(f"the reports use different k: {before.get('k')} vs {after.get('k')}")
    other = after_configuration or configuration
    old, new = reciprocal_ranks(before, configuration), reciprocal_ranks(after, other)
    if set(old) != set(new):
        only_old, only_new = len(set(old) - set(new)), len(set(new) - set(old))
        raise ReportMismatch(
            f"the reports cover different questions ({only_old} only before, {only_new} only"
            " after): run both on the same split and query files"
        )
    keys = sorted(old)
    names = (f"{configuration} (before)", f"{other} (after)")

    def run(chosen: list[Key]) -> PairedDifference:
        return paired_bootstrap(
            [old[key][1] for key in chosen],
            [new[key][1] for key in chosen],
            strata=[key[0] for key in chosen],
            names=names,
            resamples=resamples,
            seed=seed,
        )

    kinds = sorted({old[key][0] for key in keys})
    by_kind = {kind: run([key for key in keys if old[key][0] == kind]) for kind in kinds}
    return run(keys), by_kind


def changed_questions(
    before: dict[str, Any],
    after: dict[str, Any],
    configuration: str,
    *,
    after_configuration: str | None = None,
) -> list[tuple[str, str, str, float, float]]:
    """(corpus, id, kind, rr before, rr after) of every question whose reciprocal rank moved,
    the largest losses first."""
    old = reciprocal_ranks(before, configuration)
    new = reciprocal_ranks(after, after_configuration or configuration)
    moved = [
        (key[0], key[1], old[key][0], old[key][1], new[key][1])
        for key in sorted(set(old) & set(new))
        if old[key][1] != new[key][1]
    ]
    return sorted(moved, key=lambda row: row[4] - row[3])


def format_comparison(overall: PairedDifference, by_kind: dict[str, PairedDifference]) -> str:
    lines = [f"- {overall.describe()}", ""]
    lines.append("| kind | queries | before | after | difference | CI |")
    lines.append("|---|---|---|---|---|---|")
    for kind, d in by_kind.items():
        lines.append(
            f"| {kind} | {d.pairs} | {d.mean_a:.3f} | {d.mean_b:.3f} | {d.difference:+.3f}"
            f" | [{d.low:+.3f}, {d.high:+.3f}] |"
        )
    return "\n".join(lines)
