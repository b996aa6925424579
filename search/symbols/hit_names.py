"""The identifiers on a search hit that go to definition and find references take.

A hit's ``names``: the name its chunk defines (``send`` of ``Client.send``: hybrid and ``sym:``
hits), then the identifiers the search matched on its lines (exact and regex hits: the text of
each match range that is one whole identifier; hybrid hits: the query's words that read as code
-- ``max_retries``, ``parseHttpHeader`` -- where the chunk holds them as whole words), in order,
each once, at most ``MAX_NAMES``.
The API carries them on every hit (``names``) so a client can call ``/api/symbols/definitions``
or ``/api/symbols/references`` with one; the results page links both for each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from search.symbols.lookup import MAX_NAME_CHARS

MAX_NAMES = 3
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_CODE_LIKE = re.compile(r"[\dA-Z]")


def defined_name(symbol: str) -> str:
    """The name a chunk's ``symbol`` defines (its last part), or "" when it is no identifier."""
    name = symbol.rsplit(".", 1)[-1].strip()
    return name if _IDENTIFIER.fullmatch(name) and len(name) <= MAX_NAME_CHARS else ""


def matched_identifiers(matches: Iterable[Mapping[str, Any]]) -> list[str]:
    """The distinct whole identifiers among ``matches``' ranges (``{"text", "ranges"}``): a
    range inside a longer word (``max`` of ``pool_maxsize``) names nothing."""
    found: list[str] = []
    for match in matches:
        text = str(match.get("text") or "")
        for start, end in match.get("ranges") or []:
            piece = text[start:end]
            whole = (start == 0 or not _word(text[start - 1])) and (
                end >= len(text) or not _word(text[end])
            )
            if whole and _IDENTIFIER.fullmatch(piece) and piece not in found:
                found.append(piece)
                if len(found) >= MAX_NAMES:
                    return found
    return found


def code_words(query: str) -> list[str]:
    """The words of a natural-language ``query`` that read as code identifiers: with an
    underscore, a digit or a capital after the first letter (``max_retries``, ``parseHttp``),
    not plain words (``retry``) that would find every use of an English word."""
    return [
        word
        for word in dict.fromkeys(_IDENTIFIER.findall(query))
        if len(word) <= MAX_NAME_CHARS and ("_" in word or _CODE_LIKE.search(word[1:]))
    ]


def words_in(content: str, words: Iterable[str]) -> list[dict[str, Any]]:
    """``words`` that ``content`` holds as whole words, as match ranges ``matched_identifiers``
    reads (one line holding each)."""
    found = []
    for word in words:
        hit = re.search(r"(?<![\w$])" + re.escape(word) + r"(?![\w$])", content)
        if hit:
            found.append({"text": word, "ranges": [(0, len(word))]})
    return found


def hit_names(symbol: str, matches: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """The ``names`` of a hit whose chunk defines ``symbol`` and whose lines matched
    ``matches``."""
    names = [name] if (name := defined_name(symbol)) else []
    for identifier in matched_identifiers(matches):
        if identifier not in names:
            names.append(identifier)
    return names[:MAX_NAMES]


def _word(char: str) -> bool:
    return char.isalnum() or char in "_$"
