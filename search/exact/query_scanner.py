"""The query language's text as tokens: quoted literals, ``/regexes/``, words, and the characters
that may be boolean syntax -- a ``(`` at a word's start, a ``)`` closing one, a ``-`` before a
quote, a regex or a ``(`` -- each with the span it came from.

Parentheses and ``-`` are only candidates here: ``search.exact.query_language`` keeps those that
group or negate patterns and gives the rest back to the text (``merge_text``), so ``(no: it
doesn't)``, ``print(x)`` and ``-r`` stay what they were.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from search.exact.errors import QueryRejected
from search.exact.query_filters import canonical_filter

TokenKind = Literal["word", "quote", "regex", "lparen", "rparen", "neg"]
REGEX_METACHARACTERS = frozenset("\\.^$*+?()[]{}|")
_QUOTED_FILTER = re.compile(r"-?([A-Za-z]+):\"")
_REGEX_FILTER = re.compile(r"-?([A-Za-z]+):/")
_CLOSING = re.compile(r"\)*(?=\s|$)")


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    start: int
    end: int
    text: str  # a literal's or a regex's text (escapes resolved); else the source text
    value: str | None = None  # a filter word's "quoted value" (``content:"a b"``)

    @property
    def plain(self) -> bool:
        """A regex with no metacharacter (``/about/``): a URL path among a question's words."""
        return self.kind == "regex" and REGEX_METACHARACTERS.isdisjoint(self.text)


def read_quoted(text: str, start: int) -> tuple[str, int]:
    """The literal of the quote at ``start`` and the index after its closing quote."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in '"\\':
            out.append(text[i + 1])
            i += 2
            continue
        if ch == '"':
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise QueryRejected(
        "unbalanced_quote",
        f'unbalanced quote at position {start}: a "quoted literal" needs a closing quote'
        ' (write \\" for a quote inside it)',
        {"position": start},
    )


def read_regex(text: str, start: int) -> tuple[str, int] | None:
    """The pattern of a ``/regex/`` word at ``start`` and the index after it, or None when the
    slash does not open one (then it is ordinary text). The closing slash ends the word, or is
    followed by the ``)`` of groups only."""
    if start + 1 >= len(text) or text[start + 1].isspace() or text[start + 1] == "/":
        return None
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append("/" if text[i + 1] == "/" else text[i : i + 2])
            i += 2
            continue
        if ch == "/":
            at_word_end = _CLOSING.match(text, i + 1) is not None
            if not at_word_end or text[i - 1].isspace():
                return None  # "/usr/bin/env", "/ b /": a path or a slash, not a regex
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    return None


def _word_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and not text[end].isspace():
        end += 1
    return end


def _closing_parens(text: str, start: int, tokens: list[Token]) -> int:
    """Right after a quote or a regex: its group's closing ``)`` characters, as tokens."""
    i = start
    while i < len(text) and text[i] == ")":
        tokens.append(Token("rparen", i, i + 1, ")"))
        i += 1
    return i


def _word(text: str, start: int, tokens: list[Token]) -> int:
    """The word at ``start`` (a ``name:"quoted value"`` filter as one), its unbalanced closing
    ``)`` characters apart."""
    quoted = _QUOTED_FILTER.match(text, start)
    if quoted and canonical_filter(quoted.group(1)):
        value, end = read_quoted(text, quoted.end() - 1)
        tokens.append(Token("word", start, end, text[start:end], value))
        return _closing_parens(text, end, tokens)
    pattern = _REGEX_FILTER.match(text, start)
    if pattern and canonical_filter(pattern.group(1)) == "content":
        found = read_regex(text, pattern.end() - 1)
        if found is not None:  # content:/a b/: the regex, spaces and all, is the value
            tokens.append(Token("word", start, found[1], text[start : found[1]]))
            return _closing_parens(text, found[1], tokens)
    end = _word_end(text, start)
    word = text[start:end]
    unbalanced = word.count(")") - word.count("(")
    closing = len(word) - len(word.rstrip(")"))
    strip = max(0, min(unbalanced, closing))
    if strip < len(word):
        tokens.append(Token("word", start, end - strip, word[: len(word) - strip]))
    for i in range(end - strip, end):
        tokens.append(Token("rparen", i, i + 1, ")"))
    return end


def _negates(text: str, start: int) -> bool:
    """Whether a ``-`` before ``start`` may negate: a quote, a group or a regex follows."""
    following = text[start : start + 1]
    return following in ('"', "(") or (following == "/" and read_regex(text, start) is not None)


def scan(text: str) -> list[Token]:
    """The tokens of ``text``, in order. Raises ``QueryRejected`` for an unbalanced quote."""
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "(":
            tokens.append(Token("lparen", i, i + 1, "("))
            i += 1
        elif ch == "-" and _negates(text, i + 1):
            tokens.append(Token("neg", i, i + 1, "-"))
            i += 1
        elif ch == '"':
            literal, end = read_quoted(text, i)
            tokens.append(Token("quote", i, end, literal))
            i = _closing_parens(text, end, tokens)
        elif ch == "/" and (found := read_regex(text, i)) is not None:
            pattern, end = found
            tokens.append(Token("regex", i, end, pattern))
            i = _closing_parens(text, end, tokens)
        else:
            i = _word(text, i, tokens)
    return tokens


def merge_text(
    text: str, tokens: list[Token], as_text: set[int], joinable: Callable[[Token], bool]
) -> list[Token]:
    """``tokens`` with those at the indexes ``as_text`` (parentheses and ``-`` that group or
    negate nothing) made words again, each joined to the ``joinable`` tokens it touches (plain
    words, not filters or quotes): ``(no:``, ``doesn't)``, ``-(x)``."""
    merged: list[tuple[Token, bool]] = []  # (token, whether it is text given back)
    for index, token in enumerate(tokens):
        is_text = index in as_text
        if merged:
            previous, previous_text = merged[-1]
            touching = previous.end == token.start
            if touching and (
                (is_text and (previous_text or joinable(previous)))
                or (previous_text and joinable(token))
            ):
                span = text[previous.start : token.end]
                merged[-1] = (Token("word", previous.start, token.end, span), True)
                continue
        if is_text:
            token = replace(token, kind="word")
        merged.append((token, is_text))
    return [token for token, _ in merged]
