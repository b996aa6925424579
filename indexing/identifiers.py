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

Everything is regex-based and linear; inputs are cut at ``max_chars`` so that a
pathological chunk (a minified file on one line) cannot stall indexing or a query.
"""

from __future__ import annotations

import functools
import itertools
import re

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


def identifier_words(
    text: str, *, unique: bool = False, max_chars: int = DEFAULT_MAX_CHARS
) -> list[str]:
    """All searchable tokens of ``text``, lowercase, in order of appearance.

    Each identifier contributes its words followed by its whole form when it has more
    than one word.  Duplicates are kept by default because term frequency matters for
    ranking; pass ``unique=True`` for query parsing.
    """
    if len(text) > max_chars:
        text = text[:max_chars]
    tokens: list[str] = []
    for match in _CHAIN.finditer(text):
        chain = match.group()
        # Very long chains (generated or minified code) are split but neither cached
        # nor kept whole.
        tokens.extend(_chain_tokens(chain) if len(chain) <= 256 else split_identifier(chain))
    if unique:
        return list(dict.fromkeys(tokens))
    return tokens


def searchable_text(text: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Space-joined tokens of ``text`` for ``to_tsvector('simple', ...)``."""
    return " ".join(identifier_words(text, max_chars=max_chars))
