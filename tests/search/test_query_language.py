"""The query language: filters, literals and regexes, and plain text that stays plain."""

from __future__ import annotations

import pytest

from search.exact.errors import QueryRejected
from search.exact.filter_words import written_filters
from search.exact.mode_requests import choose_mode
from search.exact.pattern_logic import Term
from search.exact.patterns import compile_term, regex_required_literals
from search.exact.query_language import parse_search_query

# Questions people (and the held-out benchmark) type: none of them may turn into syntax.
ORDINARY_QUESTIONS = [
    "how does the client follow redirects?",
    "HTTP_PROXY / HTTPS_PROXY",
    "what does note: mean",
    "where is the connection pool configured",
    "what happens on error: timeout in the transport?",
    "how do I set a base_url/prefix for every request",
    "/usr/bin/env python shebang handling",
    "why does a / b raise ZeroDivisionError",
    "std::vector push_back",
    "Needed::Size",
    "retry_with_backoff",
    "localhost:8000 refused",
    "https://example.com/path parsing",
    "what is -r for in the cli",
    "a:b mapping in config",
    "and/or both",
    "does case matter? (no: it doesn't)",
    '12" screen size',
    "why does visiting /about/ send the browser to /about instead",
    "/api/ returns 404 after upgrade",
]


@pytest.mark.parametrize("question", ORDINARY_QUESTIONS)
def test_ordinary_text_has_no_syntax_and_runs_hybrid(question: str) -> None:
    parsed = parse_search_query(question)
    assert not parsed.has_syntax, (parsed.terms, parsed.filter_count)
    assert parsed.free_text == " ".join(question.split())
    assert choose_mode(parsed, "auto") == ("hybrid", [])


def test_filters_literals_and_regexes_are_recognised() -> None:
    parsed = parse_search_query(
        "repo:httpx -repo:old* lang:Python file:src/**/*.py -file:*_test.py path:docs/ "
        'case:yes "follow_redirects=True" /def \\w+_auth/ timeout'
    )
    assert parsed.repos == ["httpx"] and parsed.exclude_repos == ["old*"]
    assert parsed.languages == ["python"]
    assert parsed.files == ["src/**/*.py", "docs/"] and parsed.exclude_files == ["*_test.py"]
    assert parsed.case_sensitive is True
    assert [(t.kind, t.text) for t in parsed.terms] == [
        ("literal", "follow_redirects=True"),
        ("regex", r"def \w+_auth"),
    ]
    assert parsed.words == ["timeout"]
    mode, terms = choose_mode(parsed, "auto")
    assert mode == "regex" and [t.text for t in terms][-1] == "timeout"


def test_a_filter_name_with_nothing_after_its_colon_is_a_word_that_is_noted() -> None:
    parsed = parse_search_query('retry -file: vendor/ sym: "x y" std:: note: type:')
    # Searched as words, as before; noted so that the answer can say so.
    assert parsed.words[:2] == ["retry", "-file:"] and parsed.filter_count == 0
    assert [(b.written, b.position, b.suggestion) for b in parsed.bare_filters] == [
        ("-file:", 6, "-file:vendor/"),
        ("sym:", 21, 'sym:"x y"'),  # whether the search takes it is the notice's to check
        ("type:", 44, None),  # nothing follows
    ]
    assert (
        parsed.bare_filters[0].suggested_query == 'retry -file:vendor/ sym: "x y" std:: note: type:'
    )


def test_filters_as_written_are_keyed_by_their_canonical_spelling() -> None:
    assert written_filters('x path:src/ -FILE:"a b" Language:py file: y note:z') == {
        "file:src/": "path:src/",
        "-file:a b": '-FILE:"a b"',
        "lang:py": "Language:py",
    }


def test_a_metacharacter_free_slash_word_is_a_regex_only_without_other_words() -> None:
    # On its own (or with filters and quoted literals) /about/ is a regex; a real pattern stays
    # one beside free words, and those words are then literals required in the file.
    alone = parse_search_query("/about/ repo:site")
    assert [(t.kind, t.text, t.position) for t in alone.terms] == [("regex", "about", 0)]
    assert alone.words == [] and choose_mode(alone, "auto")[0] == "regex"
    both = parse_search_query('"x" /b/ /a/')
    assert [(t.kind, t.text) for t in both.terms] == [
        ("literal", "x"),
        ("regex", "b"),
        ("regex", "a"),
    ]
    pattern = parse_search_query("/visit.*about/ redirect")
    assert [t.text for t in pattern.terms] == ["visit.*about"]
    assert choose_mode(pattern, "auto")[0] == "regex"


def test_quotes_and_slashes_escape_inside_patterns() -> None:
    parsed = parse_search_query(r'"say \"hi\" \\ now" /a\/b/')
    assert [t.text for t in parsed.terms] == ['say "hi" \\ now', "a/b"]
    assert parse_search_query('"foo.bar[baz]()" ":= -> ::"').terms[1].text == ":= -> ::"


@pytest.mark.parametrize(
    ("query", "code", "fragment"),
    [
        (
            "rpo:httpx timeout",
            "unknown_filter",
            "unknown filter 'rpo:' at position 0 — did you mean repo:?",
        ),
        ("timeout lnag:go", "unknown_filter", "did you mean lang:?"),
        ('foo "bar', "unbalanced_quote", "position 4"),
        ('""', "empty_pattern", "empty quoted literal"),
        ("case:maybe x", "invalid_filter", "case:yes or case:no"),
        ("type:blob x", "invalid_filter", "type:symbol|file|semantic"),
        ("-case:yes x", "invalid_filter", "cannot be negated"),
        ('"a\x00b"', "invalid_pattern", "NUL"),
    ],
)
def test_bad_syntax_is_rejected_naming_what_and_where(query: str, code: str, fragment: str) -> None:
    with pytest.raises(QueryRejected) as caught:
        parse_search_query(query)
    assert caught.value.code == code
    assert fragment in caught.value.message


def test_too_many_filters_and_patterns_are_bounded() -> None:
    with pytest.raises(QueryRejected, match="at most 50 filters"):
        parse_search_query(" ".join(["lang:go"] * 500))
    with pytest.raises(QueryRejected, match="at most 10 patterns"):
        parse_search_query(" ".join(['"x"'] * 11))
    deep = '"' + '\\"' * 200 + '"'
    assert parse_search_query(deep).terms[0].text == '"' * 200


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [("a(", "missing )"), (".{0,100000}", "invalid repetition size"), ("[z-a]", "range")],
)
def test_invalid_or_unbounded_regexes_are_rejected(pattern: str, problem: str) -> None:
    with pytest.raises(QueryRejected) as caught:
        compile_term(Term("regex", pattern, 3), False)
    assert caught.value.code == "invalid_regex"
    assert "position 3" in caught.value.message and problem in caught.value.message


def test_pathological_regexes_run_in_linear_time() -> None:
    matcher = compile_term(Term("regex", "(a*)*b", 0), True)
    assert matcher.ranges("a" * 100_000) == []
    assert matcher.ranges("aaab") == [(0, 4)]
    huge = compile_term(Term("regex", "x" * 10_000, 0), True)
    assert huge.ranges("y" * 1000) == []


def test_regex_narrowing_literals_are_required_substrings() -> None:
    assert regex_required_literals(r"def \w+_auth") == ["def ", "_auth"]
    assert regex_required_literals(r"foo\.bar\(") == ["foo.bar("]
    assert regex_required_literals(r"colou?r_name") == ["colo", "r_name"]
    assert regex_required_literals(r"ab{0,3}cde") == ["cde"]
    assert regex_required_literals("get|set") == []
    assert regex_required_literals(r"\x41bcd\p{Greek}xyz") == ["bcd", "xyz"]


def test_case_insensitive_literal_ranges_are_character_offsets() -> None:
    matcher = compile_term(Term("literal", "Client", 0), False)
    assert matcher.ranges("é client CLIENT") == [(2, 8), (9, 15)]
    assert compile_term(Term("literal", "Client", 0), True).ranges("client Client") == [(7, 13)]
