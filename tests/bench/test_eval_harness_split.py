"""The split evaluation: pooled and per-corpus reporting, and comparing saved reports.

Pure logic (no database): the search function is a stand-in that answers from a table, so the
pooled and per-corpus numbers can be checked exactly.
"""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from bench.eval.harness.ablation import Configuration
from bench.eval.harness.compare import (
    ReportMismatch,
    changed_questions,
    compare_reports,
    format_comparison,
)
from bench.eval.harness.corpora import (
    parse_manifest,
)
from bench.eval.harness.queries import (
    parse_query_set,
)
from bench.eval.harness.split import CorpusRun, compare, format_split_report, run_split
from tests.bench.test_eval_harness_manifest import GOOD

# --- run_split with a stand-in search -------------------------------------------------------


@dataclass
class FakeHit:
    file_path: str
    start_line: int
    end_line: int
    symbol: str = ""
    repo_id: uuid.UUID | None = None


@dataclass
class FakeStage:
    status: str = "ran"
    reason: str = ""


@dataclass
class FakeResult:
    hits: list[FakeHit] = field(default_factory=list)

    def stage(self, name: str) -> FakeStage:
        return FakeStage()


def _query_set(prefix: str) -> Any:
    return parse_query_set(
        {
            "queries": [
                {
                    "id": f"{prefix}{n}",
                    "query": f"{prefix} question {n}",
                    "kind": "locate" if n < 2 else "docs",
                    "expected": [
                        {"path": f"{prefix}.py", "start_line": 10 * n + 1, "end_line": 10 * n + 5}
                    ],
                }
                for n in range(4)
            ]
        }
    )


def _search(request: Any) -> FakeResult:
    """'good' puts the right chunk first; 'bad' puts it third, and misses 'y' questions 2 and 3."""
    prefix, _word, number = request.query.split()
    n = int(number)
    right = FakeHit(f"{prefix}.py", 10 * n + 1, 10 * n + 5)
    wrong = FakeHit("other.py", 1, 2)
    if request.use_bm25 and request.use_vector:  # the "good" configuration
        return FakeResult([right, wrong])
    if prefix == "y" and n >= 2:
        return FakeResult([wrong, wrong])
    return FakeResult([wrong, wrong, right])


GOOD_CONFIG = Configuration("good", {})
BAD_CONFIG = Configuration("bad", {"use_vector": False})


def _runs() -> list[CorpusRun]:
    corpora = parse_manifest(GOOD)
    return [
        CorpusRun(corpora[0], _query_set("x"), uuid.uuid4(), {"commit": "c0ffee"}),
        CorpusRun(corpora[1], _query_set("y"), uuid.uuid4(), {"commit": "beef"}),
    ]


def test_run_split_pools_corpora_and_compares() -> None:
    report = run_split(
        _runs(),
        split="all",
        k=10,
        configurations=(BAD_CONFIG, GOOD_CONFIG),
        comparisons=[("bad", "good")],
        search=_search,
    )
    assert report.pooled["good"].mrr == 1.0
    # bad: x all at rank 3 (4 x 1/3), y two at rank 3 and two missed -> 6/3 / 8 = 0.25
    assert report.pooled["bad"].mrr == pytest.approx(0.25)
    assert report.pooled["bad"].by_kind["docs"]["mrr"] == pytest.approx((2 / 3) / 4)
    per_corpus = {
        name: {c.name: c.metrics.mrr for c in ablation.configurations if c.metrics}
        for name, ablation in report.per_corpus.items()
    }
    assert per_corpus["one-1.0"]["bad"] == pytest.approx(1 / 3)
    assert per_corpus["two-2.0"]["bad"] == pytest.approx(1 / 6)
    (difference,) = report.comparisons
    assert difference.difference == pytest.approx(0.75)
    assert difference.pairs == 8 and difference.decided
    by_kind = report.comparisons_by_kind[0]
    assert sorted(by_kind) == ["docs", "locate"]
    # locate: every pair gains 2/3; docs: x gains 2/3 twice, y gains 1 twice -> 5/6, and the
    # corpus strata make every resample draw two of each, so the intervals are single points.
    assert by_kind["locate"].difference == pytest.approx(2 / 3)
    assert by_kind["docs"].difference == pytest.approx(5 / 6)
    assert by_kind["docs"].low == pytest.approx(5 / 6) == by_kind["docs"].high
    assert by_kind["docs"].pairs == 4
    text = format_split_report(report)
    assert "| docs | 4 | 0.167 | 1.000 | +0.833 | [+0.833, +0.833] |" in text
    assert "Split all: 2 corpora (one-1.0, two-2.0), 8 queries, k=10" in text
    assert "| good | 1.000 |" in text
    assert "| bad | 0.333 | 0.167 |" in text  # the per-corpus table
    assert "good - bad: +0.750" in text and "good better" in text
    data = json.loads(json.dumps(report.as_dict()))
    assert data["corpora"][1]["commit"] == "beef"
    assert data["comparisons"][0]["decided"] is True


def test_k_cuts_the_ranks() -> None:
    report = run_split(
        _runs(), split="all", k=2, configurations=(BAD_CONFIG, GOOD_CONFIG), search=_search
    )
    assert report.pooled["bad"].mrr == 0.0  # rank 3 is outside k=2
    assert report.pooled["good"].mrr == 1.0


def test_comparing_a_skipped_configuration_says_why() -> None:
    chatty = Configuration("chatty", {}, needs_chat=True)
    report = run_split(_runs(), split="all", configurations=(GOOD_CONFIG, chatty), search=_search)
    assert report.skipped == {"chatty": "--with-llm not given"}
    with pytest.raises(ValueError, match="cannot compare chatty: --with-llm not given"):
        compare(report, "good", "chatty")


# --- comparing saved reports ----------------------------------------------------------------


def _saved(configurations: tuple[Configuration, ...], k: int = 10) -> dict:
    report = run_split(_runs(), split="all", k=k, configurations=configurations, search=_search)
    return json.loads(json.dumps(report.as_dict()))


def test_saved_reports_pair_question_by_question() -> None:
    before = _saved((BAD_CONFIG,))
    after = _saved((GOOD_CONFIG,))
    overall, by_kind = compare_reports(before, after, "bad", after_configuration="good")
    assert overall.difference == pytest.approx(0.75) and overall.pairs == 8
    assert by_kind["docs"].difference == pytest.approx(5 / 6)
    same, _ = compare_reports(before, before, "bad")
    assert (same.difference, same.low, same.high) == (0.0, 0.0, 0.0)
    text = format_comparison(overall, by_kind)
    assert "| docs | 4 | 0.167 | 1.000 | +0.833 | [+0.833, +0.833] |" in text
    moved = changed_questions(before, after, "bad", after_configuration="good")
    assert len(moved) == 8
    # every question gains; the largest gains (a miss turned into rank 1) come last
    assert moved[-1] == ("two-2.0", "y3", "docs", 0.0, 1.0)
    assert moved[0][4] - moved[0][3] == pytest.approx(2 / 3)
    assert changed_questions(before, before, "bad") == []


def test_saved_reports_that_cannot_be_paired_say_why() -> None:
    before = _saved((BAD_CONFIG,))
    with pytest.raises(ReportMismatch, match="different k: 10 vs 2"):
        compare_reports(before, _saved((BAD_CONFIG,), k=2), "bad")
    fewer = copy.deepcopy(before)
    del fewer["per_corpus"]["two-2.0"]
    with pytest.raises(ReportMismatch, match="4 only before, 0 only after"):
        compare_reports(before, fewer, "bad")
    with pytest.raises(ReportMismatch, match=r"good did not run on one-1\.0: not in the report"):
        compare_reports(before, before, "good")
    unranked = copy.deepcopy(before)
    for ablation in unranked["per_corpus"].values():
        for query in ablation["configurations"][0]["queries"]:
            query.pop("rank")
    with pytest.raises(ReportMismatch, match="no per-question ranks"):
        compare_reports(unranked, before, "bad")
    with pytest.raises(ReportMismatch, match="not a split report"):
        compare_reports({"k": 10}, before, "bad")


def test_over_every_repository_a_hit_counts_only_in_the_questions_own_repository() -> None:
    runs = _runs()
    home = {"x": runs[0].repository_id, "y": runs[1].repository_id}
    seen: list[Any] = []

    def search(request: Any) -> FakeResult:
        """The expected range twice: first in another repository (same path and lines), then in
        the question's own."""
        seen.append(request.repo_ids)
        prefix, _word, number = request.query.split()
        n = int(number)
        lines = (10 * n + 1, 10 * n + 5)
        return FakeResult(
            [
                FakeHit(f"{prefix}.py", *lines, repo_id=uuid.uuid4()),
                FakeHit(f"{prefix}.py", *lines, repo_id=home[prefix]),
            ]
        )

    every = run_split(
        runs, split="all", configurations=(GOOD_CONFIG,), search=search, every_repository=True
    )
    assert set(map(str, seen)) == {"None"}  # no repository filter on any search
    pooled = every.pooled["good"]
    assert pooled.mrr == 0.5 and pooled.hit_at_1 == 0.0 and pooled.hit_at_k == 1.0
    assert pooled.recall_at_k == 1.0
    assert every.as_dict()["every_repository"] is True
    assert "Searched over every repository" in format_split_report(every)

    seen.clear()
    own = run_split(runs, split="all", configurations=(GOOD_CONFIG,), search=search)
    assert {tuple(ids) for ids in seen} == {(home["x"],), (home["y"],)}
    assert own.pooled["good"].mrr == 1.0  # inside one repository nothing is elsewhere
    assert "Searched over every repository" not in format_split_report(own)
