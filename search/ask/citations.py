"""Reading the model's ``[n]`` citations and rewriting the answer around them.

The model only ever sees numbered snippets and is told to cite by number. This module finds the
numbers it wrote (``[1]``, ``[1, 3]``, ``[1][2]``, ``[2-4]``), keeps those that name a snippet
it was given, drops the others (reported back as warnings), and renumbers the kept ones in the
order they are first cited so that ``[1]`` in the rendered answer is the first source.

It also removes file locations the model typed itself (``src/app.py:42``, ``lines 10-20``):
those would be unverified, and every location a user sees must come from chunk metadata.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

# One bracket group of numbers: [1], [1, 3], [1;2], [2-4], [ 5 ]
CITATION_GROUP = re.compile(r"\[\s*(\d{1,4}(?:\s*(?:,|;|-|\u2013)\s*\d{1,4})*)\s*\]")
# A bracket group directly followed by "(" is a markdown link the model wrote, not a citation.
_MARKDOWN_LINK_AFTER = re.compile(r"\(")
_MAX_RANGE = 20
# path-like token with a line suffix: foo/bar.py:12, bar.go:12-30, baz.rs#L4-L9
TYPED_LOCATION = re.compile(
    r"(?P<path>(?:[\w.\-]+/)*[\w\-]+\.[A-Za-z0-9]{1,8})(?P<lines>(?::|#L)\d+(?:[-\u2013:]L?\d+)?)"
)
TYPED_LINES = re.compile(r"\(?\b(?:lines?|ll?\.)\s+\d+(?:\s*(?:-|\u2013|to|and)\s*\d+)?\)?", re.I)


@dataclass
class ParsedCitations:
    """Citations found in one answer."""

    cited: list[int]  # valid snippet numbers, in order of first citation
    invalid: list[int]  # numbers that named no snippet, in order of first appearance
    text: str  # the answer with invalid numbers removed and valid ones renumbered [1]..[m]
    markdown: str  # like ``text``, each marker a markdown link (``link_for``)
    removed_locations: list[str] = field(default_factory=list)  # locations the model typed


def _numbers(group: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*[,;]\s*", group.strip()):
        bounds = re.split(r"\s*[-\u2013]\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            low, high = int(bounds[0]), int(bounds[1])
            if low <= high and high - low < _MAX_RANGE:
                numbers.extend(range(low, high + 1))
                continue
        numbers.extend(int(b) for b in bounds if b.isdigit())
    return numbers


def _strip_typed_locations(text: str) -> tuple[str, list[str]]:
    removed: list[str] = []

    def drop_lines(match: re.Match[str]) -> str:
        removed.append(match.group(0))
        return match.group("path")

    def drop_words(match: re.Match[str]) -> str:
        removed.append(match.group(0).strip("()"))
        return ""

    text = TYPED_LOCATION.sub(drop_lines, text)
    text = TYPED_LINES.sub(drop_words, text)
    return text, removed


def parse_citations(
    answer: str,
    snippet_count: int,
    *,
    link_for: Callable[[int], str] | None = None,
) -> ParsedCitations:
    """The citations of ``answer`` given ``snippet_count`` snippets numbered from 1.

    ``link_for(number)`` gives the URL of snippet ``number`` for the markdown rendering (whose
    markers are the renumbered positions); without it the markdown is the plain text.
    """
    cited: list[int] = []
    invalid: list[int] = []

    def is_link_text(match: re.Match[str], source: str) -> bool:
        return bool(_MARKDOWN_LINK_AFTER.match(source, match.end()))

    for match in CITATION_GROUP.finditer(answer):
        if is_link_text(match, answer):
            continue
        for number in _numbers(match.group(1)):
            if 1 <= number <= snippet_count:
                if number not in cited:
                    cited.append(number)
            elif number not in invalid:
                invalid.append(number)
    position_of = {number: position for position, number in enumerate(cited, start=1)}

    def render(source: str, as_link: bool) -> str:
        def replace(match: re.Match[str]) -> str:
            if is_link_text(match, source):
                return match.group(0)
            positions: list[int] = []
            for number in _numbers(match.group(1)):
                position = position_of.get(number)
                if position is not None and position not in positions:
                    positions.append(position)
            if as_link and link_for is not None:
                return "".join(f"[[{p}]]({link_for(cited[p - 1])})" for p in positions)
            return "".join(f"[{p}]" for p in positions)

        rendered = CITATION_GROUP.sub(replace, source)
        # A removed citation can leave "word ." or doubled spaces behind.
        rendered = re.sub(r"[ \t]+([.,;:!?])", r"\1", rendered)
        return re.sub(r"[ \t]{2,}", " ", rendered).strip()

    cleaned, removed = _strip_typed_locations(answer)
    return ParsedCitations(
        cited=cited,
        invalid=invalid,
        text=render(cleaned, as_link=False),
        markdown=render(cleaned, as_link=True),
        removed_locations=removed,
    )
