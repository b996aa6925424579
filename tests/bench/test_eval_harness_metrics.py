"""Metric math of the evaluation harness, with exact numbers on crafted results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.eval.harness.metrics import (
    QueryOutcome,
    ResultSlot,
    compute_metrics,
    first_hit_rank,
    percentile,
    recall,
)
from bench.eval.harness.queries import (
    QuerySetError,
    check_query_set,
    load_query_set,
    parse_query_set,
)

ROOT = Path(__file__).resolve().parents[2]


def _queries() -> list:
    return list(
        parse_query_set(
            {
                "queries": [
                    {
                        "id": "a",
                        "query": "where is x",
                        "kind": "how",
                        "expected": [
                            {"path": "x.py", "start_line": 10, "end_line": 20, "symbol": "X.run"},
                            {"path": "y.py", "start_line": 1, "end_line": 5},
                        ],
                    },
                    {
                        "id": "b",
                        "query": "tests of y",
                        "kind": "tests",
                        "expected": [{"path": "tests/t.py", "start_line": 3, "end_line": 4}],
                    },
                    {
                        "id": "c",
                        "query": "Zed",
                        "kind": "identifier",
                        "expected": [
                            {"path": "z.py", "start_line": 7, "end_line": 9, "symbol": "Zed"}
                        ],
                    },
                ]
            }
        ).queries
    )


def test_hit_needs_same_path_and_overlapping_lines() -> None:
    a = _queries()[0]
    touching = QueryOutcome(a, (ResultSlot("x.py", 20, 30),), 1.0)
    before = QueryOutcome(a, (ResultSlot("x.py", 1, 9),), 1.0)
    other_file = QueryOutcome(a, (ResultSlot("w.py", 10, 20),), 1.0)
    assert first_hit_rank(touching, 5) == 1
    assert first_hit_rank(before, 5) is None
    assert first_hit_rank(other_file, 5) is None


def test_exact_aggregate_numbers() -> None:
    a, b, c = _queries()
    outcomes = [
        # a: first hit at rank 2 (x.py), y.py never covered -> recall 1/2; symbol X.run at rank 2
        QueryOutcome(
            a,
            (
                ResultSlot("docs/a.rst", 1, 100, is_doc=True),
                ResultSlot("x.py", 12, 18, symbol="X.run"),
                ResultSlot("tests/t.py", 1, 2, is_test=True),
            ),
            10.0,
        ),
        # b: hit at rank 1, the slot is a test (wanted: not noise for a tests query)
        QueryOutcome(b, (ResultSlot("tests/t.py", 4, 8, is_test=True),), 20.0),
        # c: the right range at rank 4 (beyond k=3), wrong symbol at rank 1 overlapping
        QueryOutcome(
            c,
            (
                ResultSlot("q.py", 1, 5),
                ResultSlot("q.py", 6, 9),
                ResultSlot("q.py", 10, 12),
                ResultSlot("z.py", 7, 9, symbol="Zed"),
            ),
            40.0,
        ),
    ]
    m = compute_metrics(outcomes, k=3)
    assert m.queries == 3
    assert m.hit_at_1 == pytest.approx(1 / 3)
    assert m.hit_at_k == pytest.approx(2 / 3)
    assert m.mrr == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert m.recall_at_k == pytest.approx((0.5 + 1 + 0) / 3)
    assert m.symbol_queries == 2  # a and c name a symbol, b does not
    assert m.symbol_hit_at_k == pytest.approx(1 / 2)
    # 7 slots within k=3: docs/a.rst, tests/t.py (a), tests/t.py (b) are tests/docs
    assert m.test_doc_share == pytest.approx(3 / 7)
    # over the code queries a and c only: 2 of 6 slots
    assert m.test_doc_share_code_queries == pytest.approx(2 / 6)
    assert m.p50_ms == pytest.approx(20.0)
    assert m.p95_ms == pytest.approx(20 + 0.9 * 20)  # between 20 and 40 at 0.95 * 2 = 1.9
    assert m.by_kind["how"] == {"queries": 1.0, "hit_at_k": 1.0, "mrr": 0.5}
    assert m.by_kind["identifier"]["mrr"] == 0.0
    # at k=4 the identifier query hits at rank 4 and its symbol counts
    m4 = compute_metrics(outcomes, k=4)
    assert m4.mrr == pytest.approx((1 / 2 + 1 + 1 / 4) / 3)
    assert m4.symbol_hit_at_k == 1.0


def test_symbol_hit_requires_the_exact_symbol() -> None:
    a = _queries()[0]
    near = QueryOutcome(a, (ResultSlot("x.py", 10, 20, symbol="X"),), 1.0)
    m = compute_metrics([near], k=5)
    assert m.hit_at_k == 1.0
    assert m.symbol_hit_at_k == 0.0


def test_recall_counts_each_expected_range_once() -> None:
    a = _queries()[0]
    outcome = QueryOutcome(a, (ResultSlot("x.py", 10, 11), ResultSlot("x.py", 12, 13)), 1.0)
    assert recall(outcome, 5) == 0.5


def test_empty_results_and_no_queries() -> None:
    a = _queries()[0]
    m = compute_metrics([QueryOutcome(a, (), 5.0)], k=5)
    assert (m.hit_at_1, m.hit_at_k, m.mrr, m.recall_at_k, m.test_doc_share) == (0, 0, 0, 0, 0)
    assert m.test_doc_share_code_queries is None
    assert compute_metrics([], k=5).queries == 0
    with pytest.raises(ValueError):
        compute_metrics([], k=0)


def test_percentile_interpolates_like_numpy() -> None:
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 95) == pytest.approx(4.8)
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) == 0.0


@pytest.mark.parametrize(
    "bad",
    [
        {"queries": [{"query": "", "expected": [{"path": "a", "start_line": 1, "end_line": 1}]}]},
        {"queries": [{"query": "q", "expected": []}]},
        {"queries": [{"query": "q", "expected": [{"path": "a", "start_line": 5, "end_line": 2}]}]},
        {
            "queries": [
                {
                    "query": "q",
                    "kind": "vibes",
                    "expected": [{"path": "a", "start_line": 1, "end_line": 1}],
                }
            ]
        },
        {
            "queries": [
                {
                    "id": "1",
                    "query": "q",
                    "expected": [{"path": "a", "start_line": 1, "end_line": 1}],
                },
                {
                    "id": "1",
                    "query": "r",
                    "expected": [{"path": "a", "start_line": 1, "end_line": 1}],
                },
            ]
        },
        {"nothing": []},
    ],
)
def test_malformed_query_sets_are_refused(bad: dict) -> None:
    with pytest.raises(QuerySetError):
        parse_query_set(bad)


def test_range_check_finds_wrong_ranges(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import os\n\n\ndef run():\n    return 1\n")
    good = {"path": "m.py", "start_line": 4, "end_line": 5, "symbol": "run"}
    shifted = {"path": "m.py", "start_line": 1, "end_line": 2, "symbol": "run"}
    too_long = {"path": "m.py", "start_line": 4, "end_line": 9}
    missing = {"path": "nope.py", "start_line": 1, "end_line": 1}
    query_set = parse_query_set(
        {
            "queries": [
                {"id": str(i), "query": "q", "expected": [e]}
                for i, e in enumerate([good, shifted, too_long, missing])
            ]
        }
    )
    problems = check_query_set(tmp_path, query_set)
    assert len(problems) == 3
    assert not any(p.startswith("query 0:") for p in problems)


def test_shipped_query_set_shape() -> None:
    query_set = load_query_set(ROOT / "bench" / "eval" / "flask-queries.json")
    kinds = [q.kind for q in query_set.queries]
    assert len(kinds) >= 40
    assert sum(k in ("locate", "how") for k in kinds) / len(kinds) >= 0.5
    assert {"identifier", "conceptual", "tests", "docs"} <= set(kinds)
    assert json.loads((ROOT / "bench" / "eval" / "flask-queries.json").read_text())["corpus"]


def test_shipped_query_set_ranges_hold_in_the_corpus() -> None:
    corpus = ROOT / "bench" / "corpora" / "flask-3.0.3"
    if not (corpus / "src" / "flask" / "app.py").exists():
        pytest.skip("corpus not fetched: run bench/eval/fetch_corpus.py")
    query_set = load_query_set(ROOT / "bench" / "eval" / "flask-queries.json")
    assert check_query_set(corpus, query_set) == []
