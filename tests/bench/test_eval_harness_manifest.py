"""The evaluation corpora: the manifest, split selection, the shipped query sets, label checks.

Pure logic (no database).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from bench.eval.harness.corpora import (
    Corpus,
    ManifestError,
    load_manifest,
    parse_manifest,
    select_corpora,
)
from bench.eval.harness.queries import (
    ExpectedRange,
    check_expected_range,
    check_query_set,
    load_query_set,
)

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
