"""The manual's query-language page (docs/query-language.md) says what the parser does.

Every filter, alias and refused foreign filter the parser knows is on the page, and every one
the page lists is known; every error code the query language raises is in the page's tables and
every code there is raised; each example of a refusal is refused with that code (and the
message the page quotes); every example query runs through the parser.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from search.exact.errors import QueryRejected
from search.exact.file_names import refuse_bad_ranges
from search.exact.mode_requests import choose_mode, hybrid_request
from search.exact.patterns import compile_term
from search.exact.query_filters import ALIASES, FILTERS, FOREIGN_FILTERS, TYPE_ALIASES
from search.exact.query_language import parse_search_query
from search.types import SearchRequest

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "query-language.md").read_text(encoding="utf-8")
SOURCES = sorted((ROOT / "search" / "exact").glob("*.py"))
# Codes of the query language raised outside search/exact (the hybrid executor's scope).
RAISED_ELSEWHERE = {"unknown_branch"}
# Refusals that need indexed repositories, a request field or a cursor to show.
NEEDS_DATA = {"ambiguous_repository", "invalid_mode", "invalid_cursor"}


def section(heading: str) -> str:
    """The page's text under ``heading`` (a ##/### title), up to the next heading."""
    match = re.search(rf"^#+ {re.escape(heading)}\n(.*?)(?=^#+ |\Z)", PAGE, re.M | re.S)
    assert match, heading
    return match.group(1)


def rows(text: str) -> list[list[str]]:
    """The cells of the body rows of the markdown tables in ``text`` (headers left out)."""
    lines = text.splitlines()
    found = []
    for index, line in enumerate(lines):
        header = index + 1 < len(lines) and lines[index + 1].startswith("| ---")
        if line.startswith("|") and not line.startswith("| ---") and not header:
            found.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return found


def names(cell: str) -> set[str]:
    return set(re.findall(r"`-?([a-z]+):", cell))


def test_every_filter_the_parser_knows_is_on_the_page_and_no_other() -> None:
    listed = set().union(*(names(row[0]) for row in rows(section("Filters"))))
    assert listed == set(FILTERS)
    aliases = set().union(
        *(names(row[0]) for row in rows(section("GitHub and Sourcegraph spellings")))
    )
    assert aliases == {*ALIASES, "content", "type"}
    typed = re.findall(r"`type:([a-z]+)`", section("GitHub and Sourcegraph spellings"))
    assert set(typed) - {"file"} == set(TYPE_ALIASES)
    foreign = rows(section("Other code hosts' filters"))
    assert {row[0].strip("`").rstrip(":") for row in foreign} == set(FOREIGN_FILTERS)
    for row in foreign:  # what to write instead, as the error says it
        instead = FOREIGN_FILTERS[row[0].strip("`").rstrip(":")]
        assert row[1].replace("`", "") == instead, row


def raised_codes() -> set[str]:
    pattern = re.compile(r"(?:QueryRejected|rejected_at)\(\s*\"([a-z_]+)\"")
    return {code for path in SOURCES for code in pattern.findall(path.read_text())}


def page_codes() -> dict[str, list[str]]:
    """code -> the example cells of its rows, from both tables of "What is refused"."""
    found: dict[str, list[str]] = {}
    for row in rows(section("What is refused")):
        code = row[0].strip("`")
        if re.fullmatch(r"[a-z_]+", code):
            found.setdefault(code, []).append(row[2] if len(row) > 2 else "")
    return found


def test_every_error_code_is_on_the_page_and_every_code_there_is_raised() -> None:
    raised, listed = raised_codes(), set(page_codes())
    assert raised - listed == set()
    assert listed - raised - RAISED_ELSEWHERE == set()


def dry_run(query: str) -> None:
    """What ``run_search`` checks before it reads any repository."""
    parsed = parse_search_query(query)
    mode, terms = choose_mode(parsed, "auto")
    for glob in [*parsed.files, *parsed.exclude_files]:
        refuse_bad_ranges(glob)
    if mode in ("exact", "regex"):
        for term in terms:
            compile_term(term, bool(parsed.case_sensitive))
    if mode == "hybrid" and not parsed.free_text and not parsed.terms:
        hybrid_request(parsed, SearchRequest(query=query))


def refusal_examples() -> list[tuple[str, str, str | None]]:
    """(code, example query, the message it quotes) of every row that shows one."""
    found = []
    for code, cells in page_codes().items():
        if code in NEEDS_DATA:
            continue
        for cell in cells:
            for example, quoted in re.findall(r"`([^`]+)`(?: → \"([^\"]+)\")?", cell):
                found.append((code, example, quoted or None))
    return found


@pytest.mark.parametrize(("code", "example", "quoted"), refusal_examples())
def test_each_refusal_on_the_page_is_refused_so(
    code: str, example: str, quoted: str | None
) -> None:
    with pytest.raises(QueryRejected) as caught:
        dry_run(example)
    assert caught.value.code == code, caught.value.message
    if quoted:
        assert quoted in caught.value.message


def example_queries() -> list[str]:
    block = re.search(r"## Examples\n\n```text\n(.*?)```", PAGE, re.S)
    assert block
    return [re.split(r"\s{2,}", line)[0] for line in block.group(1).splitlines() if line]


@pytest.mark.parametrize("query", example_queries())
def test_every_example_query_parses(query: str) -> None:
    parsed = parse_search_query(query)
    choose_mode(parsed, "auto")
    assert parsed.has_syntax


LOOK_ALIKES = re.search(r"^So (.*?) are\s+plain text\.", PAGE, re.M | re.S)


@pytest.mark.parametrize(
    "text", re.findall(r"`([^`]+)`", LOOK_ALIKES.group(1) if LOOK_ALIKES else "")
)
def test_the_look_alikes_the_page_names_are_plain_text(text: str) -> None:
    parsed = parse_search_query(text)
    assert not parsed.has_syntax and choose_mode(parsed, "auto")[0] == "hybrid"
