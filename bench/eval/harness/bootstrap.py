"""Paired bootstrap confidence intervals for the difference of two configurations' scores.

Both configurations ran the same queries, so their per-query scores (e.g. reciprocal ranks) come
in pairs. A resample draws queries with replacement (within each stratum, e.g. each corpus, when
strata are given, so every resample keeps the split's make-up) and takes the mean of
``b - a`` over the drawn queries; the interval is the percentile interval of those means. A
lever's gain is judged against noise: when the interval holds 0 the data do not tell the two
apart. Pure functions, seeded, so a report is reproducible to the digit.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from bench.eval.harness.metrics import percentile

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 16
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairedDifference:
    """``b`` minus ``a``: the observed mean difference and its bootstrap interval."""

    a: str
    b: str
    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float
    confidence: float
    resamples: int
    seed: int
    pairs: int

    @property
    def decided(self) -> bool:
        """True when the interval leaves out 0: the difference is outside the noise."""
        return self.low > 0 or self.high < 0

    def as_dict(self) -> dict[str, object]:
        return {**self.__dict__, "decided": self.decided}

    def describe(self) -> str:
        verdict = (
            f"{self.b} better"
            if self.low > 0
            else f"{self.a} better"
            if self.high < 0
            else "no difference outside the noise"
        )
        return (
            f"{self.b} - {self.a}: {self.difference:+.3f}"
            f" ({self.mean_b:.3f} vs {self.mean_a:.3f}, {self.pairs} paired queries);"
            f" {self.confidence * 100:.0f} % CI [{self.low:+.3f}, {self.high:+.3f}]"
            f" ({self.resamples} resamples, seed {self.seed}): {verdict}"
        )


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    strata: Sequence[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    names: tuple[str, str] = ("a", "b"),
) -> PairedDifference:
    """The mean of ``b - a`` and its percentile bootstrap interval over paired scores."""
    if len(a) != len(b):
        raise ValueError(f"paired scores differ in length: {len(a)} vs {len(b)}")
    if not a:
        raise ValueError("no paired scores to compare")
    if strata is not None and len(strata) != len(a):
        raise ValueError("strata must name one stratum per pair")
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    differences = [y - x for x, y in zip(a, b, strict=True)]
    groups: dict[str, list[float]] = {}
    for index, difference in enumerate(differences):
        groups.setdefault(strata[index] if strata is not None else "", []).append(difference)
    members = [groups[key] for key in sorted(groups)]
    rng = random.Random(seed)
    count = len(differences)
    means = []
    for _ in range(resamples):
        total = 0.0
        for group in members:
            total += sum(rng.choices(group, k=len(group)))
        means.append(total / count)
    tail = (1 - confidence) / 2 * 100
    return PairedDifference(
        a=names[0],
        b=names[1],
        mean_a=sum(a) / count,
        mean_b=sum(b) / count,
        difference=sum(differences) / count,
        low=percentile(means, tail),
        high=percentile(means, 100 - tail),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        pairs=count,
    )
