"""The split evaluation: corpora manifest, split selection, paired bootstrap, pooled reporting.

Pure logic (no database): the search function is a stand-in that answers from a table, so the
pooled and per-corpus numbers can be checked exactly.
"""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from search.evaluation.bootstrap import paired_bootstrap
from search.evaluation.compare import (
    ReportMismatch,
    changed_questions,
    compare_reports,
    format_comparison,
)
from search.evaluation.corpora import (
    Corpus,
    ManifestError,
    load_manifest,
    parse_manifest,
    select_corpora,
)
from search.evaluation.harness import Configuration
from search.evaluation.queries import (
    ExpectedRange,
    check_expected_range,
    check_query_set,
    load_query_set,
    parse_query_set,
)
from search.evaluation.split import CorpusRun, compare, format_split_report, run_split

ROOT = Path(__file__).resolve().parents[2]
SHA = "a" * 64

GOOD = {
    "corpora": [
        {
            "name": "one-1.0",
            "language": "python",
            "source": "pypi",
            "package": "one",
            "version": "1.0",
            "sha256": SHA,
            "split": "tune",
            "queries": "bench/eval/one.json",
        },
        {
            "name": "two-2.0",
            "language": "go",
            "source": "debian",
            "package": "golang-two-dev",
            "version": "2.0-1",
            "sha256": SHA,
            "split": "report",
            "queries": "bench/eval/two.json",
            "include": {
                "usr/share/gocode/src/two": "",
                "usr/share/doc/two/README.md.gz": "README.md",
            },
        },
        {
            "name": "three-3.0",
            "language": "typescript",
            "source": "npm",
            "package": "three",
            "version": "3.0.0",
            "sha256": SHA,
            "split": "report",
            "queries": "bench/eval/three.json",
        },
    ]
}


def _with(index: int, **changes: Any) -> dict:
    data = copy.deepcopy(GOOD)
    for key, value in changes.items():
        if value is None:
            data["corpora"][index].pop(key, None)
        else:
            data["corpora"][index][key] = value
    return data


def test_manifest_parses_fields_and_include() -> None:
    corpora = parse_manifest(GOOD)
    assert [c.name for c in corpora] == ["one-1.0", "two-2.0", "three-3.0"]
    assert corpora[1].include == (
        ("usr/share/gocode/src/two", ""),
        ("usr/share/doc/two/README.md.gz", "README.md"),
    )
    assert corpora[0].include == ()
    assert corpora[0].directory(Path("/r")) == Path("/r/bench/corpora/one-1.0")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"corpus": []}, "'corpora' list"),
        (_with(0, sha256=None), "sha256"),
        (_with(0, sha256="ABC"), "64 lowercase hex"),
        (_with(0, source="cargo"), "source 'cargo'"),
        (_with(0, split="train"), "split 'train'"),
        (_with(0, name="../evil"), "name may hold only"),
        (_with(1, include=None), "needs 'include'"),
        (_with(1, include={"/etc": ""}), "must be relative"),
        (_with(1, include={"a": "../b"}), "must be relative"),
        (_with(0, colour="blue"), "unknown field(s) colour"),
        (_with(2, name="one-1.0"), "duplicate corpus name(s): one-1.0"),
    ],
)
def test_malformed_manifests_are_refused_with_the_field_named(data: dict, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(data)
    assert message in str(caught.value)


def test_invalid_json_manifest(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text("{nope")
    with pytest.raises(ManifestError, match="not valid JSON"):
        load_manifest(tmp_path / "m.json")


def test_split_selection() -> None:
    corpora = parse_manifest(GOOD)
    assert [c.name for c in select_corpora(corpora, split="tune")] == ["one-1.0"]
    assert [c.name for c in select_corpora(corpora, split="report")] == ["two-2.0", "three-3.0"]
    assert len(select_corpora(corpora, split="all")) == 3
    assert [c.name for c in select_corpora(corpora, names=["three-3.0", "one-1.0"])] == [
        "three-3.0",
        "one-1.0",
    ]
    with pytest.raises(ManifestError, match="no corpus named nine"):
        select_corpora(corpora, names=["nine"])
    with pytest.raises(ManifestError, match="'holdout' is not one of"):
        select_corpora(corpora, split="holdout")
    with pytest.raises(ManifestError, match="no corpus in split 'report'"):
        select_corpora(corpora[:1], split="report")


def test_shipped_manifest_is_valid_and_split_by_corpus() -> None:
    corpora = load_manifest(ROOT / "bench" / "eval" / "corpora.json")
    flask = next(c for c in corpora if c.package == "flask")
    assert (flask.name, flask.version, flask.split) == ("flask-3.0.3", "3.0.3", "tune")
    assert {c.split for c in corpora} == {"tune", "report"}
    assert len({c.language for c in corpora}) >= 2
    for corpus in corpora:
        assert (ROOT / corpus.queries).is_file(), corpus.queries
        assert load_query_set(ROOT / corpus.queries).queries


def test_shipped_query_sets_hold_in_every_fetched_corpus() -> None:
    checked = 0
    for corpus in load_manifest(ROOT / "bench" / "eval" / "corpora.json"):
        tree = corpus.directory(ROOT)
        if not (tree / ".git").exists():
            continue
        assert check_query_set(tree, load_query_set(ROOT / corpus.queries)) == [], corpus.name
        checked += 1
    if not checked:
        pytest.skip("no corpus fetched: run bench/eval/fetch_corpus.py --all")


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


# --- run_split with a stand-in search -------------------------------------------------------


@dataclass
class FakeHit:
    file_path: str
    start_line: int
    end_line: int
    symbol: str = ""


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


# --- label checks for other languages -------------------------------------------------------

GO = """package mux

// Path adds a matcher for the URL path.
// It accepts a template.
func (r *Route) Path(tpl string) *Route {
	r.err = r.addRegexpMatcher(tpl, regexpTypePath)
	return r
}

/* a block
   comment */
type Router struct {
	routes []*Route
}
"""


def test_go_ranges_must_start_at_the_named_definition(tmp_path: Path) -> None:
    (tmp_path / "route.go").write_text(GO)
    ok = ExpectedRange("route.go", 3, 8, symbol="Route.Path")
    assert check_expected_range(tmp_path, ok) is None
    assert check_expected_range(tmp_path, ExpectedRange("route.go", 10, 14, "Router")) is None
    wrong = check_expected_range(tmp_path, ExpectedRange("route.go", 3, 8, symbol="Route.Host"))
    assert wrong is not None and "does not start at the definition of 'Route.Host'" in wrong
    inside = check_expected_range(tmp_path, ExpectedRange("route.go", 6, 8, symbol="Route.Path"))
    assert inside is not None  # starts in the body, not at the definition


def test_corpus_type_is_plain_data() -> None:
    corpus = Corpus("n", "go", "npm", "p", "1", SHA, "tune", "q.json")
    assert corpus.include == ()


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
