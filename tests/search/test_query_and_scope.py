"""Query parsing (identifier spellings, phrases) and scope decisions (tests/docs, path globs)."""

from __future__ import annotations

import re

import pytest

from search.retrieval.query import (
    InvalidGlob,
    glob_to_regex,
    parse_query,
    paths_regex,
    required_tsquery,
    tsquery_any,
)
from search.retrieval.scope import resolve_scope
from search.types import SearchRequest


@pytest.mark.parametrize(
    "spelling", ["parseHttpHeader", "parse_http_header", "ParseHTTPHeader", "parse-http-header"]
)
def test_identifier_spellings_give_the_same_terms(spelling: str) -> None:
    parsed = parse_query(spelling)
    assert parsed.terms == ("parse", "http", "header", "parsehttpheader")
    assert parsed.words == ("parse", "http", "header")


def test_plain_words_have_no_whole_form() -> None:
    assert parse_query("parse http header").terms == ("parse", "http", "header")


def test_dotted_names_split_and_kept_whole() -> None:
    terms = parse_query("os.path.join").terms
    assert {"os", "path", "join", "ospathjoin"} <= set(terms)


def test_quoted_phrase_becomes_an_ordered_requirement() -> None:
    parsed = parse_query('retry "exponential backoff" policy')
    assert parsed.phrases == (("exponential", "backoff"),)
    assert required_tsquery(parsed) == "('exponential' <-> 'backoff')"
    assert "exponential" in parsed.terms and "retry" in parsed.terms


def test_tsquery_operands_are_quoted() -> None:
    assert tsquery_any(["a'b", "c"]) == "'a''b' | 'c'"


def test_query_without_word_characters_has_no_terms() -> None:
    assert parse_query("?? !! ()").is_empty


@pytest.mark.parametrize(
    ("query", "tests", "docs"),
    [
        ("where is the connection pool configured", False, False),
        ("pytest fixture for the database", True, False),
        ("test_parse_header edge cases", True, False),
        ("readme install steps", False, True),
        ("documentation of the config API", False, True),
        ("tests and docs for retries", True, True),
    ],
)
def test_tests_and_docs_come_back_when_the_query_is_about_them(
    query: str, tests: bool, docs: bool
) -> None:
    scope = resolve_scope(SearchRequest(query=query))
    assert (scope.include_tests, scope.include_docs) == (tests, docs)
    if tests:
        assert "query mentions" in scope.tests_reason


def test_explicit_flags_override_detection() -> None:
    scope = resolve_scope(
        SearchRequest(query="pytest fixture", include_tests=False, include_docs=True)
    )
    assert (scope.include_tests, scope.include_docs) == (False, True)
    assert scope.tests_reason == scope.docs_reason == "requested"


@pytest.mark.parametrize(
    ("glob", "matching", "not_matching"),
    [
        ("*.py", ["a.py", "src/pkg/a.py"], ["a.pyc", "a.py/x", "apy"]),
        ("src/*.py", ["src/a.py"], ["src/pkg/a.py", "lib/src/a.py"]),
        ("src/**/*.py", ["src/a.py", "src/x/y/a.py"], ["lib/a.py"]),
        ("docs/", ["docs/a.md", "docs/x/y.rst"], ["src/docs.py", "mydocs/a.md"]),
        ("test_?.go", ["test_a.go", "pkg/test_b.go"], ["test_ab.go"]),
        ("[ab]*.txt", ["a1.txt", "dir/b.txt"], ["c.txt"]),
        ("[!a]*.txt", ["b.txt"], ["a.txt"]),
        ("a+b(c).py", ["a+b(c).py"], ["aab(c).py", "a+bc.py"]),
        ("/src/main.go", ["src/main.go"], ["x/src/main.go"]),
    ],
)
def test_globs_translate_to_anchored_regexes(
    glob: str, matching: list[str], not_matching: list[str]
) -> None:
    # PostgreSQL's ARE syntax agrees with Python's re on everything the translation emits;
    # the same globs run against the database in test_search_fulltext.
    regex = re.compile(glob_to_regex(glob))
    for path in matching:
        assert regex.search(path), (glob, path)
    for path in not_matching:
        assert not regex.search(path), (glob, path)


def test_bad_globs_are_refused() -> None:
    with pytest.raises(InvalidGlob):
        glob_to_regex("")
    with pytest.raises(InvalidGlob):
        glob_to_regex("x" * 301)
    with pytest.raises(InvalidGlob):
        paths_regex(["*.py"] * 21)
