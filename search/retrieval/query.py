"""Parsing a search query into full-text terms, the same way chunks were indexed.

Tokens come from ``indexing.identifiers.identifier_words`` -- the function that built every
chunk's ``tsvector`` -- so ``parseHttpHeader``, ``parse_http_header`` and ``parse http header``
meet: each gives ``parse``, ``http``, ``header``, and a compound identifier also gives its whole
form (``parsehttpheader``) so that the exact identifier ranks first. Text between double quotes
is a phrase: its tokens must appear in that order (``<->`` in the tsquery).

English function words (``where``, ``does``, ``the``, ``of``: ``STOPWORDS``) stay search terms
(BM25's idf weighs them down); the learned ranking model leaves them out of the question's
content words (``search.ranking.signals.content_words``).

Every token is a run of letters and digits; tsquery literals are still quoted and escaped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from indexing.identifiers import identifier_words, split_identifier

MAX_TERMS = 32
MAX_PHRASE_TOKENS = 16
MAX_PHRASES = 4
_PHRASE = re.compile(r'"([^"]*)"')
_IDENTIFIER_QUERY = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*")
_SEPARATORS = re.compile(r"::|#|->")
# Pronouns, articles, auxiliaries, question words, and prepositions and conjunctions that have
# no meaning of their own in code. Words that do name things in code (not, no, all, any, each,
# first, last, new, before, after, into, over, only, once, next, out, up, down...) are not here.
_STOPWORD_TEXT = """
    a an the this that these those it its they them their theirs there here
    i me my mine we us our ours you your yours he him his she her hers one ones
    is are was were be been being am do does did doing done has have had having
    will would shall should can could may might must
    what which who whom whose when where why how whether
    of to in on at by for with about as from than then so such
    and or but nor if also just very too
    some something anything somewhere anywhere
    don doesn didn isn aren wasn weren won shouldn couldn wouldn
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class ParsedQuery:
    text: str
    terms: tuple[str, ...]  # every token that scores (split words and whole forms), unique
    words: tuple[str, ...]  # the split words only: "all terms matched" is judged on these
    phrases: tuple[tuple[str, ...], ...]  # token sequences that must appear in order

    @property
    def is_empty(self) -> bool:
        return not self.terms


def parse_query(text: str) -> ParsedQuery:
    """Terms, words and phrases of ``text`` (capped at ``MAX_TERMS`` terms)."""
    phrases: list[tuple[str, ...]] = []
    for match in _PHRASE.finditer(text):
        tokens = tuple(identifier_words(match.group(1)))[:MAX_PHRASE_TOKENS]
        if len(tokens) > 1 and len(phrases) < MAX_PHRASES:
            phrases.append(tokens)
    plain = text.replace('"', " ")
    terms = identifier_words(plain, unique=True)[:MAX_TERMS]
    split_words = {word for chunk in plain.split() for word in split_identifier(chunk)}
    words = tuple(term for term in terms if term in split_words) or tuple(terms)
    return ParsedQuery(text=text, terms=tuple(terms), words=words, phrases=tuple(phrases))


def normalise_symbol(symbol: str) -> str:
    """``Needed::Size``, ``Foo#bar``, ``a->b`` -> dotted and lower-case, as symbols compare."""
    return _SEPARATORS.sub(".", symbol).lower()


def identifier_query(text: str) -> str | None:
    """The normalised name when the whole query is one identifier (``take_while_m_n``,
    ``ScriptInfo.load_app``, ``Needed::Size``), else None."""
    stripped = text.strip().strip("`").removesuffix("()")
    if not _IDENTIFIER_QUERY.fullmatch(stripped):
        return None
    return normalise_symbol(stripped)


def lexeme(token: str) -> str:
    """A tsquery operand for one token, quoted so no character is read as an operator."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_any(tokens: tuple[str, ...] | list[str]) -> str:
    return " | ".join(lexeme(t) for t in tokens)


def tsquery_all(tokens: tuple[str, ...] | list[str]) -> str:
    return " & ".join(lexeme(t) for t in tokens)


def tsquery_phrase(tokens: tuple[str, ...]) -> str:
    return " <-> ".join(lexeme(t) for t in tokens)


def required_tsquery(parsed: ParsedQuery) -> str | None:
    """The phrases every result must contain, or None when the query has none."""
    if not parsed.phrases:
        return None
    return " & ".join(f"({tsquery_phrase(p)})" for p in parsed.phrases)
