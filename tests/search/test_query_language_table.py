"""The query language's cases as one table: every filter and alias, the boolean forms, the typos
and other hosts' filters that are refused (with what to write), and texts that only look like
syntax. Each row is parsed and its mode chosen, as ``run_search`` does before it searches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from search.exact.errors import QueryRejected
from search.exact.mode_requests import choose_mode
from search.exact.pattern_logic import describe
from search.exact.query_language import SearchQuery, parse_search_query


@dataclass(frozen=True)
class Refused:
    code: str
    says: str  # a piece of the message
    details: tuple[tuple[str, Any], ...] = ()  # details it must carry


def refused(code: str, says: str, **details: Any) -> Refused:
    return Refused(code, says, tuple(details.items()))


def summary(parsed: SearchQuery, mode: str) -> dict[str, Any]:
    """What a row expects: the mode, and every part of the parse that is set."""
    found: dict[str, Any] = {
        "mode": mode,
        "words": parsed.words,
        "terms": [(t.kind, t.text) for t in parsed.terms],
        "repos": parsed.repos,
        "exclude_repos": parsed.exclude_repos,
        "languages": parsed.languages,
        "exclude_languages": parsed.exclude_languages,
        "files": parsed.files,
        "exclude_files": parsed.exclude_files,
        "branches": parsed.branches,
        "symbols": parsed.symbols,
        "case": parsed.case_sensitive,
        "type": parsed.type,
        "expression": describe(parsed.expression) if parsed.expression is not None else None,
    }
    return {key: value for key, value in found.items() if value not in ([], None)}


L, R = "literal", "regex"

CASES: list[tuple[str, dict[str, Any] | Refused]] = [
    # -- every filter, in its canonical spelling
    ("repo:httpx timeout", {"mode": "hybrid", "repos": ["httpx"], "words": ["timeout"]}),
    ('-repo:old* "x"', {"mode": "exact", "exclude_repos": ["old*"], "terms": [(L, "x")]}),
    ('lang:Python "x"', {"mode": "exact", "languages": ["python"], "terms": [(L, "x")]}),
    (
        '-lang:markdown "x"',
        {"mode": "exact", "exclude_languages": ["markdown"], "terms": [(L, "x")]},
    ),
    ('file:src/**/*.py "x"', {"mode": "exact", "files": ["src/**/*.py"], "terms": [(L, "x")]}),
    ('-file:*_test.go "x"', {"mode": "exact", "exclude_files": ["*_test.go"], "terms": [(L, "x")]}),
    ('case:yes "Client"', {"mode": "exact", "case": True, "terms": [(L, "Client")]}),
    ("case:no timeout", {"mode": "hybrid", "case": False, "words": ["timeout"]}),
    ('branch:release/* "x"', {"mode": "exact", "branches": ["release/*"], "terms": [(L, "x")]}),
    ("sym:send", {"mode": "symbol", "symbols": ["send"]}),
    ("type:symbol send", {"mode": "symbol", "type": "symbol", "words": ["send"]}),
    ("type:file client", {"mode": "file", "type": "file", "words": ["client"]}),
    ('type:semantic "pool"', {"mode": "hybrid", "type": "semantic", "terms": [(L, "pool")]}),
    ("content:max_retries", {"mode": "exact", "terms": [(L, "max_retries")]}),
    (
        "LANG:Go REPO:x content:y",
        {"mode": "exact", "languages": ["go"], "repos": ["x"], "terms": [(L, "y")]},
    ),
    # -- the GitHub / Sourcegraph spellings: aliases of the same filters
    (
        'language:python "max_retries"',
        {"mode": "exact", "languages": ["python"], "terms": [(L, "max_retries")]},
    ),
    ('-language:md "x"', {"mode": "exact", "exclude_languages": ["markdown"], "terms": [(L, "x")]}),
    ('path:docs/ "x"', {"mode": "exact", "files": ["docs/"], "terms": [(L, "x")]}),
    ('-path:vendor/ "x"', {"mode": "exact", "exclude_files": ["vendor/"], "terms": [(L, "x")]}),
    ("symbol:send", {"mode": "symbol", "symbols": ["send"]}),
    ('content:"follow_redirects=True"', {"mode": "exact", "terms": [(L, "follow_redirects=True")]}),
    ('content:"a b" lang:go', {"mode": "exact", "languages": ["go"], "terms": [(L, "a b")]}),
    (r"content:/def \w+/", {"mode": "regex", "terms": [(R, r"def \w+")]}),
    ("type:path client", {"mode": "file", "type": "file", "words": ["client"]}),
    # -- language names as people write them
    ('lang:py "x"', {"mode": "exact", "languages": ["python"], "terms": [(L, "x")]}),
    ('lang:C++ "x"', {"mode": "exact", "languages": ["cpp"], "terms": [(L, "x")]}),
    ('lang:c# "x"', {"mode": "exact", "languages": ["csharp"], "terms": [(L, "x")]}),
    ('language:golang "x"', {"mode": "exact", "languages": ["go"], "terms": [(L, "x")]}),
    (
        'language:JavaScript "x"',
        {"mode": "exact", "languages": ["javascript"], "terms": [(L, "x")]},
    ),
    (
        'lang:"objective-c" "x"',
        {"mode": "exact", "languages": ["objective-c"], "terms": [(L, "x")]},
    ),
    # -- boolean forms (per file) of exact and regex terms
    ('"a" "b"', {"mode": "exact", "terms": [(L, "a"), (L, "b")]}),
    ('"a" OR "b"', {"mode": "exact", "terms": [(L, "a"), (L, "b")], "expression": "(t0 OR t1)"}),
    ('"a" AND "b"', {"mode": "exact", "terms": [(L, "a"), (L, "b")], "expression": "(t0 t1)"}),
    ('"a" NOT "b"', {"mode": "exact", "terms": [(L, "a"), (L, "b")], "expression": "(t0 NOT t1)"}),
    ('"a" -"b"', {"mode": "exact", "terms": [(L, "a"), (L, "b")], "expression": "(t0 NOT t1)"}),
    ('NOT "b" "a"', {"mode": "exact", "terms": [(L, "b"), (L, "a")], "expression": "(NOT t0 t1)"}),
    (
        '"a" -content:b',
        {"mode": "exact", "terms": [(L, "a"), (L, "b")], "expression": "(t0 NOT t1)"},
    ),
    (
        '("a" OR "b") -"c"',
        {
            "mode": "exact",
            "terms": [(L, "a"), (L, "b"), (L, "c")],
            "expression": "((t0 OR t1) NOT t2)",
        },
    ),
    (
        '( "a" OR "b" ) "c"',
        {"mode": "exact", "terms": [(L, "a"), (L, "b"), (L, "c")], "expression": "((t0 OR t1) t2)"},
    ),
    (
        '"a" OR "b" "c"',
        {"mode": "exact", "terms": [(L, "a"), (L, "b"), (L, "c")], "expression": "(t0 OR (t1 t2))"},
    ),
    (
        '-("a" OR "b") "c"',
        {
            "mode": "exact",
            "terms": [(L, "a"), (L, "b"), (L, "c")],
            "expression": "(NOT (t0 OR t1) t2)",
        },
    ),
    (
        '/a+b/ OR "c"',
        {"mode": "regex", "terms": [(R, "a+b"), (L, "c")], "expression": "(t0 OR t1)"},
    ),
    (
        "(/get/ OR /set/) lang:go",
        {
            "mode": "regex",
            "languages": ["go"],
            "terms": [(R, "get"), (R, "set")],
            "expression": "(t0 OR t1)",
        },
    ),
    (
        '/x+/ OR "y" word',
        {
            "mode": "regex",
            "terms": [(R, "x+"), (L, "y")],
            "words": ["word"],
            "expression": "(t0 OR t1)",
        },
    ),
    ('("a")', {"mode": "exact", "terms": [(L, "a")], "expression": "t0"}),
    # -- refused: typos of filters, other hosts' filters, values
    (
        "rpo:httpx timeout",
        refused(
            "unknown_filter",
            "did you mean repo:?",
            suggestion="repo:",
            suggested_query="repo:httpx timeout",
        ),
    ),
    (
        "timeout lnag:go",
        refused("unknown_filter", "did you mean lang:?", suggested_query="timeout lang:go"),
    ),
    (
        "langauge:python x",
        refused("unknown_filter", "did you mean language:?", suggestion="language:"),
    ),
    ("symbl:send", refused("unknown_filter", "did you mean symbol:?")),
    ("contnet:x", refused("unknown_filter", "did you mean content:?")),
    ("-flie:x y", refused("unknown_filter", "did you mean file:?", suggested_query="-file:x y")),
    ("org:acme timeout", refused("unsupported_filter", "repo:OWNER/*", filter="org:")),
    ("user:me x", refused("unsupported_filter", "repo:OWNER/*")),
    ("rev:main x", refused("unsupported_filter", "branch:NAME")),
    ("patterntype:regexp foo", refused("unsupported_filter", "/regex/")),
    ("context:global x", refused("unsupported_filter", "no context:")),
    ("is:archived x", refused("unsupported_filter", "no is:")),
    (
        "lang:pyton x",
        refused(
            "unknown_language",
            "did you mean python?",
            suggestion="python",
            suggested_query="lang:python x",
        ),
    ),
    (
        'language:javscript "x"',
        refused(
            "unknown_language",
            "did you mean javascript?",
            suggested_query='language:javascript "x"',
        ),
    ),
    ("-lang:klingon x", refused("unknown_language", "unknown language 'klingon'")),
    ("case:maybe x", refused("invalid_filter", "case:yes or case:no")),
    ("type:blob x", refused("invalid_filter", "type:symbol|file|semantic")),
    ("-case:yes x", refused("invalid_filter", "cannot be negated")),
    ("-symbol:x y", refused("invalid_filter", "cannot be negated")),
    ('"a\x00b"', refused("invalid_pattern", "NUL")),
    ('foo "bar', refused("unbalanced_quote", "position 4")),
    ('""', refused("empty_pattern", "empty quoted literal")),
    ("content:", {"mode": "hybrid", "words": ["content:"]}),  # no value: a word
    # -- refused: boolean forms that cannot run
    (
        "timeout OR retry",
        refused("unsupported_combination", '"timeout" OR "retry"', example='"timeout" OR "retry"'),
    ),
    ("why is NOT NULL failing", refused("unsupported_combination", 'NOT "NULL"')),
    ('"a" OR retry', refused("unsupported_combination", '"a" OR "retry"')),
    ('"a" OR', refused("invalid_expression", "after it")),
    ('OR "a"', refused("invalid_expression", "before it")),
    ('"a" OR OR "b"', refused("invalid_expression", "after it")),
    ('"a" AND', refused("invalid_expression", "after it")),
    ('-"x"', refused("invalid_expression", "add a term to find")),
    ('NOT "x" lang:go', refused("invalid_expression", "add a term to find")),
    ('"a" OR -"b"', refused("invalid_expression", "add a term to find")),
    ('("a" OR "b"', refused("unbalanced_parenthesis", "position 0")),
    ('"a" OR "b")', refused("unbalanced_parenthesis", "position 10")),
    ('(repo:x "a" OR "b")', refused("invalid_expression", "outside the groups")),
    ('("a" OR "b") timeout', refused("unsupported_combination", '"timeout"', words=["timeout"])),
    ('type:semantic "a" OR "b"', refused("unsupported_combination", "natural-language")),
    ('type:file "a" OR "b"', refused("invalid_filter", "no regex, operator")),
    ('sym:x OR "b"', refused("invalid_expression", "before it")),  # filters are no terms
    ('sym:x "b"', refused("invalid_filter", "one name")),
    # -- refused: case:yes where matching ignores case
    ("case:yes timeout", refused("unsupported_combination", 'case:yes "timeout"', filter="case:")),
    ("case:yes how are redirects followed", refused("unsupported_combination", "ignores case")),
    ('case:yes type:semantic "x"', refused("unsupported_combination", "ignores case")),
    ("sym:Client case:yes", refused("unsupported_combination", "symbol search")),
    # -- texts that only look like syntax: plain words of a natural-language search
    ("error: foo", {"mode": "hybrid", "words": ["error:", "foo"]}),
    ("what does note: mean", {"mode": "hybrid", "words": ["what", "does", "note:", "mean"]}),
    ("http://x", {"mode": "hybrid", "words": ["http://x"]}),
    (
        "https://example.com/a?b=c parsing",
        {"mode": "hybrid", "words": ["https://example.com/a?b=c", "parsing"]},
    ),
    ("file:///etc/passwd", {"mode": "hybrid", "words": ["file:///etc/passwd"]}),
    (
        "how does a:b map in config",
        {"mode": "hybrid", "words": ["how", "does", "a:b", "map", "in", "config"]},
    ),
    ("std::vector push_back", {"mode": "hybrid", "words": ["std::vector", "push_back"]}),
    (r"C:\path\to\file", {"mode": "hybrid", "words": [r"C:\path\to\file"]}),
    ("localhost:8000 refused", {"mode": "hybrid", "words": ["localhost:8000", "refused"]}),
    (
        "does case matter? (no: it doesn't)",
        {"mode": "hybrid", "words": ["does", "case", "matter?", "(no:", "it", "doesn't)"]},
    ),
    ("(see the docs)", {"mode": "hybrid", "words": ["(see", "the", "docs)"]}),
    ("print(x) and foo()", {"mode": "hybrid", "words": ["print(x)", "and", "foo()"]}),
    ("what is -r for", {"mode": "hybrid", "words": ["what", "is", "-r", "for"]}),
    ("a - b and -(x y)", {"mode": "hybrid", "words": ["a", "-", "b", "and", "-(x", "y)"]}),
    (
        "why does /about/ redirect",
        {"mode": "hybrid", "words": ["why", "does", "/about/", "redirect"]},
    ),
    ("HTTP_PROXY / HTTPS_PROXY", {"mode": "hybrid", "words": ["HTTP_PROXY", "/", "HTTPS_PROXY"]}),
    ("not null or empty", {"mode": "hybrid", "words": ["not", "null", "or", "empty"]}),
    ("smile :) and/or", {"mode": "hybrid", "words": ["smile", ":)", "and/or"]}),
    ("Order:asc sorting", {"mode": "hybrid", "words": ["Order:asc", "sorting"]}),
    (
        'how does "send request" retry',
        {"mode": "hybrid", "words": ["how", "does", "retry"], "terms": [(L, "send request")]},
    ),
]


def _run(query: str) -> dict[str, Any]:
    parsed = parse_search_query(query)
    mode, _ = choose_mode(parsed, "auto")
    return summary(parsed, mode)


@pytest.mark.parametrize(("query", "expected"), CASES, ids=[query for query, _ in CASES])
def test_the_query_language_table(query: str, expected: dict[str, Any] | Refused) -> None:
    if isinstance(expected, Refused):
        with pytest.raises(QueryRejected) as caught:
            _run(query)
        error = caught.value
        assert error.code == expected.code, error.message
        assert expected.says in error.message
        for key, value in expected.details:
            assert error.details.get(key) == value, (key, error.details)
        return
    assert _run(query) == expected


def test_every_filter_and_alias_is_in_the_table() -> None:
    from search.exact.query_filters import ALIASES, FILTERS, FOREIGN_FILTERS

    written = " ".join(query.lower() for query, _ in CASES)
    missing = [name for name in (*FILTERS, *ALIASES) if f"{name}:" not in written]
    assert not missing
    refused_names = {
        query.split(":", 1)[0]
        for query, expected in CASES
        if isinstance(expected, Refused) and expected.code == "unsupported_filter"
    }
    assert refused_names <= set(FOREIGN_FILTERS)


def test_unknown_filter_errors_list_every_filter() -> None:
    from search.exact.query_filters import FILTER_NAMES

    with pytest.raises(QueryRejected) as caught:
        parse_search_query("lnag:go x")
    assert caught.value.details["filters"] == [f"{name}:" for name in FILTER_NAMES]
    assert all(f"{name}:" in caught.value.message for name in FILTER_NAMES)
