"""Line matchers for literals and regexes, and the literals that narrow a regex's candidates.

Regexes run on RE2 (``google-re2``): matching is linear in the line's length whatever the pattern,
so ``(a*)*b`` cannot backtrack; RE2 refuses what it cannot bound (``.{0,100000}`` -- repetitions
over 1000 -- or a program over ``REGEX_MAX_MEM``) and that refusal is a 400 naming the problem.
Literals match with ``str.find`` (case-sensitive) or an escaped case-insensitive ``re`` pattern,
both linear. Ranges are ``[start, end)`` character offsets in the line.

``touched_lines`` finds, with one search over a whole file (``search.exact.file_text``), the
lines that can hold a match; ``ranges`` then answers for those lines alone. A literal holds no
newline, so its whole-text matches are exactly its per-line ones. A regex is searched in
multi-line mode (``(?m)``: ``^``/``$`` at each line's ends) on the file's UTF-8 bytes: a match a
line holds is also a match of the whole text there (RE2 reads the text around a position for
``^``, ``$``, ``\\b`` and ``\\B``, and a newline is what a line's end looks like to them), so
the line is found, or a match found before it runs into it. Only ``\\A``, ``\\z`` and flags
turning ``m`` off see the difference; such a regex is matched line by line.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Protocol

import re2

from search.exact.errors import QueryRejected
from search.exact.file_text import FileText
from search.exact.pattern_logic import Term

REGEX_MAX_MEM = 8 << 20
MAX_PATTERN_CHARS = 10_000
MIN_NARROWING_CHARS = 3  # a trigram index cannot use shorter literals


class LineMatcher(Protocol):
    def ranges(self, line: str) -> list[tuple[int, int]]: ...


def touched_lines(matcher: LineMatcher, text: FileText) -> list[int] | None:
    """The indexes of ``text``'s lines that may hold a match of ``matcher`` (None: any may --
    a matcher with no whole-text search); every line holding one is among them."""
    search = getattr(matcher, "touched_lines", None)
    return None if search is None else search(text)  # type: ignore[no-any-return]


@dataclass
class LiteralMatcher:
    literal: str
    case_sensitive: bool

    def __post_init__(self) -> None:
        self._folded = re.compile(re.escape(self.literal), re.IGNORECASE)

    def ranges(self, line: str) -> list[tuple[int, int]]:
        if not self.case_sensitive:
            return [m.span() for m in self._folded.finditer(line)]
        found: list[tuple[int, int]] = []
        start = line.find(self.literal)
        while start != -1:
            found.append((start, start + len(self.literal)))
            start = line.find(self.literal, start + len(self.literal))
        return found

    def touched_lines(self, text: FileText) -> list[int]:
        whole, size = text.text, len(self.literal)

        def first(pos: int) -> tuple[int, int] | None:
            if self.case_sensitive:
                start = whole.find(self.literal, pos)
                return None if start < 0 else (start, start + size)
            match = self._folded.search(whole, pos)
            return None if match is None else match.span()

        return text.touched(first, text.char_starts)


class RegexMatcher:
    def __init__(self, pattern: str, case_sensitive: bool, position: int) -> None:
        options = re2.Options()
        options.case_sensitive = case_sensitive
        options.max_mem = REGEX_MAX_MEM
        options.log_errors = False
        try:
            self._regex = re2.compile(pattern, options)
        except re2.error as exc:
            problem = (
                exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            )
            raise QueryRejected(
                "invalid_regex",
                f"invalid regex at position {position}: {problem}",
                {"position": position, "pattern": pattern[:200]},
            ) from None
        self._whole: re2._Regexp | None = None  # the same on bytes, multi-line
        if not _LINE_BOUND.search(pattern):
            with contextlib.suppress(re2.error):  # (just over the limit): line by line
                self._whole = re2.compile(b"(?m)" + pattern.encode(), options)

    def ranges(self, line: str) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        for match in self._regex.finditer(line):
            start, end = match.span()
            if end == start and found and found[-1][1] == start:
                continue
            found.append((start, end))
            if len(found) >= 1000:
                break
        return found

    def touched_lines(self, text: FileText) -> list[int] | None:
        if self._whole is None:
            return None
        whole, data = self._whole, text.data

        def first(pos: int) -> tuple[int, int] | None:
            match = whole.search(data, pos)
            return None if match is None else match.span()

        return text.touched(first, text.byte_starts)


# What reads a line's own start or end differently from a newline: \A, \z, and flags turning
# multi-line mode off (conservative: any escaped A or z, any flag group that unsets a flag).
_LINE_BOUND = re.compile(r"\\[Az]|\(\?[a-zA-Z]*-")


def compile_term(term: Term, case_sensitive: bool) -> LineMatcher:
    if len(term.text) > MAX_PATTERN_CHARS:
        raise QueryRejected(
            "pattern_too_long",
            f"pattern at position {term.position} is over {MAX_PATTERN_CHARS} characters",
            {"position": term.position},
        )
    if term.kind == "literal":
        if "\n" in term.text:
            raise QueryRejected(
                "invalid_pattern",
                "a literal cannot span lines (matches are per line)",
                {"position": term.position},
            )
        return LiteralMatcher(term.text, case_sensitive)
    return RegexMatcher(term.text, case_sensitive, term.position)


_REPEAT = re.compile(r"\{\d+(?:,\d*)?\}")
_ESCAPED_LITERALS = frozenset(r".\/-[](){}*+?^$|#&~ \"'`!@%=:;,<>")


def regex_required_literals(pattern: str) -> list[str]:
    """Literal runs every match of ``pattern`` must contain (conservative; may be empty).

    Only the top level is read: a pattern with ``|`` outside a class, inline flags or groups
    gives up inside them. A run ends at any other metacharacter; a quantifier that allows zero
    repetitions drops the character before it.
    """
    runs: list[str] = []
    current: list[str] = []
    depth = 0
    i = 0

    def close() -> None:
        if current:
            runs.append("".join(current))
            current.clear()

    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            i += 2
            if depth == 0 and nxt in _ESCAPED_LITERALS:
                current.append(nxt)
                continue
            close()
            if nxt in "xpP" and pattern[i : i + 1] == "{":
                i = pattern.find("}", i) + 1 or len(pattern)
            elif nxt == "x":
                i += 2
            elif nxt in "pP":
                i += 1
            elif nxt.isdigit():
                while i < len(pattern) and pattern[i].isdigit():
                    i += 1
            continue
        if ch == "[":
            close()
            end = i + 1
            if end < len(pattern) and pattern[end] == "^":
                end += 1
            if end < len(pattern) and pattern[end] == "]":
                end += 1
            while end < len(pattern) and pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            i = end + 1
            continue
        if ch == "(":
            close()
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "|":
            if depth == 0:
                return []
        elif depth == 0 and ch == "{" and (repeat := _REPEAT.match(pattern, i)):
            if current:
                current.pop()
            close()
            i = repeat.end()
            continue
        elif depth == 0 and ch in "*?":
            if current:
                current.pop()
            close()
        elif depth == 0 and ch == "+":
            close()
        elif depth == 0 and ch not in ".^$":
            current.append(ch)
        else:
            close()
        i += 1
    close()
    return [r for r in runs if len(r) >= MIN_NARROWING_CHARS]
