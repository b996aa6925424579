"""A file is searched whole, then only the lines its matches touch are matched line by line: that
must find every line a line-by-line search finds (``search.exact.file_text``)."""

from __future__ import annotations

import random

import pytest

from search.exact.engine import match_file
from search.exact.file_text import FileText
from search.exact.pattern_logic import Term
from search.exact.patterns import compile_term, touched_lines

# Among them the Kelvin sign and the long s, which fold to ASCII letters.
PIECES = ["a", "b", "ab", " ", "\t", "_", "1", "é", "€x", "\u212a", "\u017f", "x", "\r", "ß"]
REGEXES = [
    "^", "$", "^$", "a*", r"\ba", r"a\b", r"\Ba", "^a", "b$", "[^a]+", r"\s+", "a.b", "(?s)a.b",
    "é", "x{2,3}", r"^\s*$", ".", r"\w+\s", "(?i)k", "\u017f", "[a-z]+_[0-9]+", "a|^b", "(a|b)$",
    r"\x{20AC}", r"\Aa", r"a\z", "(?-m)^a", "(?i-m:b$)",
]  # fmt: skip
LITERALS = ["a", "ab", "K", "s", "é", " a", "b\r"]


def per_line(matcher, lines: list[str]) -> list[int]:  # type: ignore[no-untyped-def]
    return [i for i, line in enumerate(lines) if matcher.ranges(line)]


def texts() -> list[list[str]]:
    rng = random.Random(12)
    return [
        ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6))) for _ in range(n % 7)]
        for n in range(400)
    ]


@pytest.mark.parametrize("case", [True, False])
@pytest.mark.parametrize(
    ("kind", "pattern"), [("regex", r) for r in REGEXES] + [("literal", x) for x in LITERALS]
)
def test_the_whole_file_search_touches_every_line_that_matches(
    kind: str, pattern: str, case: bool
) -> None:
    matcher = compile_term(Term(kind, pattern, 0), case)
    for lines in texts():
        touched = touched_lines(matcher, FileText(lines))
        if touched is None:  # \A, \z, m turned off: matched line by line
            assert pattern in {r"\Aa", r"a\z", "(?-m)^a", "(?i-m:b$)"}
            continue
        assert sorted(set(touched)) == touched
        expected = per_line(matcher, lines)
        assert set(expected) <= set(touched), (lines, expected, touched)
        if kind == "literal":  # a literal holds no newline: exactly its lines
            assert touched == expected


def test_a_file_matches_as_line_by_line() -> None:
    lines = {1: "def get_name_display(self):", 2: "", 3: "  return x", 4: "def get_x_display"}
    regex = compile_term(Term("regex", r"def get_\w+_display", 0), False)
    literal = compile_term(Term("literal", "RETURN", 0), False)
    found = match_file(lines, [regex, literal], max_matches=10, context_lines=0)
    assert found is not None
    count, kept, snippets = found
    assert count == 3 and [m.line for m in kept] == [1, 3, 4]
    assert kept[1].ranges == [(2, 8)] and snippets[0] == (1, 1, lines[1])
    missing = compile_term(Term("literal", "nowhere", 0), False)
    assert match_file(lines, [regex, missing], max_matches=10, context_lines=0) is None
    assert match_file({}, [regex], max_matches=10, context_lines=0) is None
