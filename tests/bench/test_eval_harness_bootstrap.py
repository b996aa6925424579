"""The paired bootstrap that judges a lever's gain against noise (pure logic)."""

from __future__ import annotations

import pytest

from bench.eval.harness.bootstrap import paired_bootstrap

# --- paired bootstrap -------------------------------------------------------------------------


def test_bootstrap_of_identical_scores_is_zero() -> None:
    scores = [1.0, 0.5, 0.0, 0.25, 1.0]
    result = paired_bootstrap(scores, list(scores))
    assert (result.difference, result.low, result.high) == (0.0, 0.0, 0.0)
    assert not result.decided


def test_bootstrap_of_a_constant_gain_is_that_gain() -> None:
    a = [0.0, 0.5, 0.25, 1.0 / 3]
    result = paired_bootstrap(a, [x + 0.125 for x in a])
    assert result.difference == pytest.approx(0.125)
    assert result.low == pytest.approx(0.125) and result.high == pytest.approx(0.125)
    assert result.decided


def test_bootstrap_of_one_lucky_query_is_not_decided() -> None:
    # b wins one of four queries: the mean gain is 0.25, but a resample without that query
    # (probability (3/4)^4 = 32 %) shows no gain, so the interval reaches 0.
    result = paired_bootstrap([0.0] * 4, [1.0, 0.0, 0.0, 0.0], resamples=1000, seed=3)
    assert result.difference == 0.25
    assert result.low == 0.0
    assert result.high == 0.75  # four of four drawn has probability 0.4 %, under the 2.5 % tail
    assert not result.decided
    again = paired_bootstrap([0.0] * 4, [1.0, 0.0, 0.0, 0.0], resamples=1000, seed=3)
    assert again == result


def test_bootstrap_strata_keep_each_corpus_share() -> None:
    a = [0.0] * 8
    b = [1.0] * 4 + [0.0] * 4  # the gain is all in corpus x
    pooled = paired_bootstrap(a, b)
    stratified = paired_bootstrap(a, b, strata=["x"] * 4 + ["y"] * 4)
    assert pooled.low < 0.5 < pooled.high
    assert stratified.low == stratified.high == 0.5  # every resample draws 4 of x, 4 of y


@pytest.mark.parametrize(
    ("a", "b", "options", "message"),
    [
        ([1.0], [1.0, 0.0], {}, "differ in length"),
        ([], [], {}, "no paired scores"),
        ([1.0], [0.0], {"strata": ["x", "y"]}, "one stratum per pair"),
        ([1.0], [0.0], {"confidence": 1.0}, "between 0 and 1"),
        ([1.0], [0.0], {"resamples": 0}, "at least 1"),
    ],
)
def test_bootstrap_refuses_bad_input(a: list, b: list, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_bootstrap(a, b, **options)
