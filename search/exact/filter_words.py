"""How a query writes its filters, beside what they mean (``search.exact.query_language``): the
words shaped like a filter, each filter as the query wrote it (``path:src/`` for the notices'
``file:src/``), and filter names written with no value (``file: src/``), with the query that
joins the next word to them."""

from __future__ import annotations

from dataclasses import dataclass

from search.exact.query_filters import FOREIGN_FILTERS, canonical_filter, near_filter
from search.exact.query_scanner import Token, scan


@dataclass(frozen=True)
class BareFilter:
    """A filter name with no value after its colon, and the query that writes the word after
    it as its value (``file: src/`` -> ``file:src/``), when a word or a quote follows."""

    written: str
    position: int
    suggestion: str | None = None
    suggested_query: str | None = None


def filter_parts(token: Token) -> tuple[bool, str, str] | None:
    """(negated, name, value) of a word shaped like a filter -- a known, foreign or nearly known
    name directly followed by a value -- else None (``note:``, ``a:b``, ``std::x``, URLs)."""
    if token.kind != "word":
        return None
    word = token.text
    negated = word.startswith("-")
    name, colon, value = word[1 if negated else 0 :].partition(":")
    if token.value is not None:
        value = token.value
    elif not value or value[0] == ":" or value.startswith("//"):
        return None
    if not (colon and name.isascii() and name.isalpha()):
        return None
    lowered = name.lower()
    if canonical_filter(lowered) or lowered in FOREIGN_FILTERS or near_filter(lowered):
        return negated, name, value
    return None


def _filter_like(token: Token) -> bool:
    """A word that reads as a filter, valued or not (``lang:go``, ``-file:``, ``repo:``)."""
    name, colon, _ = token.text.removeprefix("-").partition(":")
    return token.kind == "word" and bool(colon) and name.isascii() and name.isalpha()


def written_filters(text: str) -> dict[str, str]:
    """Each filter word of ``text`` as written (``path:src/``, ``-FILE:"a b"``), keyed by the
    canonical spelling that notices use (``file:src/``, ``-file:a b``)."""
    written: dict[str, str] = {}
    for token in scan(text):
        parts = filter_parts(token)
        canonical = canonical_filter(parts[1].lower()) if parts else None
        if parts and canonical:
            key = f"{'-' if parts[0] else ''}{canonical}:{parts[2]}"
            written.setdefault(key, text[token.start : token.end])
    return written


def bare_filters(text: str, tokens: list[Token]) -> list[BareFilter]:
    """The words that are a filter's name and its colon alone (``file:``, ``-lang:``), each with
    the query that joins the next word or quote to it (whether the search takes that query is
    for the caller to check: ``search.filter_notices``)."""
    found: list[BareFilter] = []
    for index, token in enumerate(tokens):
        name, colon, rest = token.text.removeprefix("-").partition(":")
        if token.kind != "word" or token.value is not None or not colon or rest:
            continue
        if not (name.isascii() and name.isalpha() and canonical_filter(name.lower())):
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if following is None or following.kind not in ("word", "quote") or _filter_like(following):
            found.append(BareFilter(token.text, token.start))  # nothing to join, or a filter
            continue
        suggestion = token.text + text[following.start : following.end]
        suggested = text[: token.start] + suggestion + text[following.end :]
        found.append(BareFilter(token.text, token.start, suggestion, suggested))
    return found
