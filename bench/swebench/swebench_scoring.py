"""Localisation accuracy as SweRank (Table 1) and LocAgent count it.

``Acc@k``: an instance is a hit when *every* gold location (file, or function) is among the
top ``k`` predicted ones; the figure is the share of instances that are hits, in percent.
Predictions are deduplicated in order first (a file named twice takes one place).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

FILE_KS = (1, 5, 10)
FUNCTION_KS = (5, 10)


def deduplicated(ranked: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ranked))


def hit_at(ranked: Sequence[str], gold: Iterable[str], k: int) -> bool:
    """All of ``gold`` within the first ``k`` of ``ranked`` (deduplicated). No gold: no hit."""
    wanted = set(gold)
    return bool(wanted) and wanted <= set(deduplicated(ranked)[:k])


def accuracy(hits: Sequence[bool]) -> float | None:
    """Percent of hits (None for no instances)."""
    return round(100.0 * sum(hits) / len(hits), 1) if hits else None


def score_instance(
    files: Sequence[str],
    functions: Sequence[str],
    gold_files: Sequence[str],
    gold_functions: Sequence[str],
) -> dict[str, bool | None]:
    """One instance's hits: ``file@k`` for FILE_KS and ``function@k`` for FUNCTION_KS
    (None when the instance has no gold function: only module-level lines changed)."""
    scores: dict[str, bool | None] = {f"file@{k}": hit_at(files, gold_files, k) for k in FILE_KS}
    for k in FUNCTION_KS:
        scores[f"function@{k}"] = hit_at(functions, gold_functions, k) if gold_functions else None
    return scores


def summarise(results: Sequence[dict[str, bool | None]]) -> dict[str, float | int | None]:
    """Acc@k over ``results`` (``score_instance``'s), with the instances counted."""
    summary: dict[str, float | int | None] = {"instances": len(results)}
    for key in [f"file@{k}" for k in FILE_KS] + [f"function@{k}" for k in FUNCTION_KS]:
        values = [bool(r[key]) for r in results if r.get(key) is not None]
        summary[key] = accuracy(values)
    with_functions = [r for r in results if r.get("function@5") is not None]
    summary["function_instances"] = len(with_functions)
    return summary
