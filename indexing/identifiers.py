"""Splitting code identifiers into searchable words.

Used on both sides of full-text search so that they meet: when a chunk's ``tsvector`` is
built (path, symbol and body) and when a query is parsed.  ``parseHttpHeader``,
``parse_http_header``, ``ParseHTTPHeader``, ``parse-http-header`` and ``parse http header``
all yield the words ``parse``, ``http``, ``header``; a compound identifier also yields its
whole form, lowercased with the separators removed (``parsehttpheader``), so an exact
identifier query ranks the exact identifier highest.

Why the whole form has no separators: PostgreSQL's text-search parser splits words at
``_``, ``.`` and ``-``, so ``parse_http_header`` could never survive ``to_tsvector`` as one
lexeme.  Every token produced here is a run of letters and digits, which the parser keeps
exactly as it is, so ``to_tsvector('simple', searchable_text(x))`` holds precisely these
tokens.

Dotted and namespaced names (``os.path.join``, ``std::vector``, ``$this->render``) split
into their parts, and the whole chain is kept too (``ospathjoin``).

English stems (``stem_text``, ``identifier_words(..., stems=True)``): the index also stores
the Snowball English stem of each split word where it differs from the word (``allocations``
and ``allocate`` both give ``alloc``, ``configured`` and ``configuration`` give ``configur``),
and a query's words are looked up by their stems, so a question's wording meets the code's
inflections. The exact tokens stay, so identifiers' whole forms and quoted phrases match as
before.

Everything is regex-based and linear; inputs are cut at ``max_chars`` so that a
pathological chunk (a minified file on one line) cannot stall indexing or a query.
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

DEFAULT_MAX_CHARS = 200_000
MAX_TOKEN_LENGTH = 64  # longer runs are hashes, base64 or minified noise

# A chain of identifier segments joined by `.`, `::`, `->`, `-` or `_`-style separators.
# `[^\W_]` is "a letter or digit" in any script.
_CHAIN = re.compile(r"[^\W_]\w*(?:(?:\.|::|->|-|\$)+[^\W_]\w*)*")
_NOT_ALNUM = re.compile(r"[\W_]+")
_SEGMENT_SEPARATORS = re.compile(r"(?:\.|::|->|-|\$|_)+")
# camelCase / PascalCase / ACRONYMWords / digits.  "Lowercase" is any letter that is not
# an ASCII capital, so words in other scripts stay whole (HTTPServer -> HTTP Server).
_LOWER = r"[^\W\d_A-Z]"
_CAMEL = re.compile(rf"[A-Z]+(?=[A-Z]{_LOWER})|[A-Z]?{_LOWER}+|[A-Z]+|\d+")


def split_identifier(identifier: str) -> list[str]:
    """The lowercase words of one identifier, in order (no whole form).

    >>> split_identifier("ParseHTTPHeader2")
    ['parse', 'http', 'header', '2']
    """
    words: list[str] = []
    for segment in _SEGMENT_SEPARATORS.split(identifier):
        if segment:
            words.extend(word.lower() for word in _CAMEL.findall(segment))
    # Lowercasing can add combining marks (`İ` -> `i̇`) that the PostgreSQL parser splits at.
    words = [_NOT_ALNUM.sub("", w) if not w.isalnum() else w for w in words]
    return [w for w in words if w and len(w) <= MAX_TOKEN_LENGTH]


@functools.lru_cache(maxsize=65536)  # identifiers repeat a lot within a repository
def _chain_tokens(chain: str) -> tuple[str, ...]:
    words = split_identifier(chain)
    tokens = list(words)
    # `utf8`, `sha256`, `int32`: also keep a word glued to the number that follows it.
    for word, following in itertools.pairwise(words):
        if following.isdigit() and not word.isdigit():
            tokens.append(word + following)
    if len(words) > 1:
        whole = "".join(words)
        if len(whole) <= MAX_TOKEN_LENGTH:
            tokens.append(whole)
        # For a dotted chain also keep each compound segment whole (`os.path.joinPath`
        # gives `joinpath` as well as `ospathjoinpath`).
        segments = [s for s in re.split(r"\.|::|->|\$", chain) if s]
        if len(segments) > 1:
            for segment in segments:
                seg_words = split_identifier(segment)
                if len(seg_words) > 1:
                    tokens.append("".join(seg_words))
    # An identifier contributes each of its tokens once (`sha256` is both glued and whole).
    return tuple(dict.fromkeys(tokens)) if len(tokens) > 1 else tuple(tokens)


_STEMMABLE = re.compile(r"[a-z]{3,32}")


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=131072)  # words repeat a lot within a repository
def stem(word: str) -> str:
    """The Snowball English stem of a lowercase ASCII word (other tokens are returned as is)."""
    if not _STEMMABLE.fullmatch(word):
        return word
    return str(_stemmer().stemWord(word))


def identifier_words(
    text: str, *, unique: bool = False, max_chars: int = DEFAULT_MAX_CHARS, stems: bool = False
) -> list[str]:
    """All searchable tokens of ``text``, lowercase, in order of appearance.

    Each identifier contributes its words followed by its whole form when it has more
    than one word.  Duplicates are kept by default because term frequency matters for
    ranking; pass ``unique=True`` for query parsing.  With ``stems=True`` each split word
    is replaced by its English stem (whole forms stay exact): a query's words then meet
    every inflection, because the index holds each word once under its stem -- as the
    word itself where the stem is the word, in the stems of ``stem_text`` where not.
    """
    if len(text) > max_chars:
        text = text[:max_chars]
    tokens: list[str] = []
    for match in _CHAIN.finditer(text):
        chain = match.group()
        # Very long chains (generated or minified code) are split but neither cached
        # nor kept whole.
        chain_tokens = _chain_tokens(chain) if len(chain) <= 256 else split_identifier(chain)
        if stems:
            words = set(split_identifier(chain)) if len(chain_tokens) > 1 else set(chain_tokens)
            chain_tokens = tuple(stem(t) if t in words else t for t in chain_tokens)
        tokens.extend(chain_tokens)
    if unique:
        return list(dict.fromkeys(tokens))
    return tokens


def stem_words(text: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> list[str]:
    """The English stems of the split words of ``text`` that differ from the word, in order."""
    if len(text) > max_chars:
        text = text[:max_chars]
    stems: list[str] = []
    for match in _CHAIN.finditer(text):
        for word in split_identifier(match.group()):
            stemmed = stem(word)
            if stemmed != word:
                stems.append(stemmed)
    return stems


def stem_text(text: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Space-joined ``stem_words`` for the stems field of a chunk's ``tsvector``."""
    return " ".join(stem_words(text, max_chars=max_chars))


def searchable_text(text: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Space-joined tokens of ``text`` for ``to_tsvector('simple', ...)``."""
    return " ".join(identifier_words(text, max_chars=max_chars))
