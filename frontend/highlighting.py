"""Server-side syntax highlighting: source text to HTML lines, with query terms marked.

Pygments tokenizes the whole text (so a snippet in the middle of a docstring is still coloured as
one); the tokens are then cut into lines so each line keeps its real number, and the query's
words are wrapped in ``<mark>`` inside the tokens. The colours come from Pygments' ``github-dark``
style, copied into ``static/frontend/style.css`` under ``.code``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import STANDARD_TYPES, _TokenType
from pygments.util import ClassNotFound

# Past this size a file is shown as plain text: tokenizing a megabyte takes seconds.
MAX_HIGHLIGHT_CHARS = 400_000
MIN_TERM_LENGTH = 2
STOP_WORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "does", "do", "for", "from", "how", "in"}
    | {"is", "it", "of", "on", "or", "the", "this", "that", "to", "what", "when", "where"}
    | {"which", "who", "why", "with"}
)
# Names our language detector uses that Pygments spells differently.
LEXER_ALIASES = {"shell": "bash", "csharp": "csharp", "cpp": "cpp", "tsx": "tsx", "text": "text"}


@dataclass(frozen=True)
class Line:
    number: int
    html: SafeString
    has_match: bool


def query_terms(query: str) -> list[str]:
    """The words of a query worth marking: identifiers are split (``parseHttp`` -> parse, http)."""
    words: list[str] = []
    for raw in re.findall(r"[A-Za-z0-9_]+", query):
        parts = [raw, *re.split(r"_+|(?<=[a-z0-9])(?=[A-Z])", raw)]
        for part in parts:
            word = part.lower()
            if len(word) >= MIN_TERM_LENGTH and word not in STOP_WORDS and word not in words:
                words.append(word)
    return words


def terms_pattern(terms: Iterable[str]) -> re.Pattern[str] | None:
    unique = sorted({term for term in terms if term}, key=len, reverse=True)
    if not unique:
        return None
    return re.compile("|".join(re.escape(term) for term in unique), re.IGNORECASE)


def lexer_for(path: str, language: str = "") -> Lexer:
    options = {"stripnl": False, "ensurenl": False, "tabsize": 0}
    try:
        return get_lexer_for_filename(path, **options)
    except ClassNotFound:
        pass
    name = LEXER_ALIASES.get(language, language)
    if name:
        try:
            return get_lexer_by_name(name, **options)
        except ClassNotFound:
            pass
    return TextLexer(**options)


def _css_class(ttype: _TokenType) -> str:
    """Pygments' short class name for a token type (as its HTML formatter computes it)."""
    name = STANDARD_TYPES.get(ttype)
    suffix = ""
    while name is None:
        suffix = ttype[-1] + suffix
        ttype = ttype.parent
        name = STANDARD_TYPES.get(ttype)
    return name + suffix


def _marked(text: str, pattern: re.Pattern[str] | None) -> tuple[str, bool]:
    if pattern is None:
        return escape(text), False
    pieces: list[str] = []
    position = 0
    for match in pattern.finditer(text):
        pieces.append(escape(text[position : match.start()]))
        pieces.append(f"<mark>{escape(match.group(0))}</mark>")
        position = match.end()
    pieces.append(escape(text[position:]))
    return "".join(pieces), position > 0


def _marked_ranges(text: str, column: int, ranges: Sequence[tuple[int, int]]) -> tuple[str, bool]:
    """``text`` (starting at ``column`` of its line) with the parts inside ``ranges`` marked."""
    pieces: list[str] = []
    position = 0
    for start, end in ranges:
        start, end = max(start - column, position), min(end - column, len(text))
        if start >= end:
            continue
        pieces.append(escape(text[position:start]))
        pieces.append(f"<mark>{escape(text[start:end])}</mark>")
        position = end
    pieces.append(escape(text[position:]))
    return "".join(pieces), position > 0


def highlight_lines(
    code: str,
    *,
    path: str = "",
    language: str = "",
    first_line: int = 1,
    terms: Sequence[str] = (),
    ranges: Mapping[int, Sequence[tuple[int, int]]] | None = None,
) -> list[Line]:
    """One ``Line`` per line of ``code``, numbered from ``first_line``.

    With ``ranges`` (line number -> ``[start, end)`` character offsets, what an exact or regex
    search reported) exactly those characters are marked and ``terms`` are not used."""
    code = code.replace("\r\n", "\n")
    lexer = lexer_for(path, language) if len(code) <= MAX_HIGHLIGHT_CHARS else TextLexer()
    pattern = None if ranges is not None else terms_pattern(terms)
    lines: list[Line] = []
    current: list[str] = []
    matched = False
    column = 0

    def finish_line() -> None:
        nonlocal current, matched, column
        lines.append(Line(first_line + len(lines), mark_safe("".join(current)), matched))  # noqa: S308 - every piece is escaped
        current, matched, column = [], False, 0

    for ttype, value in lexer.get_tokens(code):
        css = _css_class(ttype)
        for index, piece in enumerate(value.split("\n")):
            if index:
                finish_line()
            if not piece:
                continue
            if ranges is not None:
                line_ranges = ranges.get(first_line + len(lines), ())
                html, found = _marked_ranges(piece, column, sorted(line_ranges))
            else:
                html, found = _marked(piece, pattern)
            column += len(piece)
            matched = matched or found
            current.append(f'<span class="{css}">{html}</span>' if css else html)
    if current or not code.endswith("\n"):
        finish_line()
    return lines


def snippet_window(lines: Sequence[Line], max_lines: int) -> tuple[list[Line], int]:
    """At most ``max_lines`` lines, starting a little before the first line with a match.

    Returns the lines and how many lines of the chunk were left out.
    """
    if len(lines) <= max_lines:
        return list(lines), 0
    first_match = next((i for i, line in enumerate(lines) if line.has_match), 0)
    start = max(0, min(first_match - 2, len(lines) - max_lines))
    return list(lines[start : start + max_lines]), len(lines) - max_lines
