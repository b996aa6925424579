"""Whether a hybrid answer holds any strong match, or only results that faintly resemble the
query (``only_weak_matches``): "frobnicate the quux" must not read as 20 hits.

A hit is strong when it holds every informative word of the query (in its text, path or symbol;
identifiers split, so ``parseHttpHeader`` and ``parse http header`` meet) or when its vector
similarity reaches ``STRONG_SIMILARITY``. The floor suits the bundled all-MiniLM-L6-v2 encoder
(unrelated code and questions score below 0.12, related ones 0.3 to 0.75); it is read from
``settings.REPO_SEARCH_STRONG_SIMILARITY`` where a team's model needs another.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.conf import settings

from search.types import SearchHit

STRONG_SIMILARITY = 0.25
CHECKED_HITS = 50  # the head of the ranked answer that is looked at
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "this",
        "that",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "find",
        "show",
        "me",
        "code",
    ]
)


def query_words(query: str) -> list[str]:
    """The informative words of ``query``, lowercased, identifiers split into their parts."""
    words: list[str] = []
    for raw in re.findall(r"[A-Za-z0-9]+", query):
        for part in re.split(r"(?<=[a-z0-9])(?=[A-Z])", raw):
            word = part.lower()
            if len(word) >= 2 and word not in STOP_WORDS and word not in words:
                words.append(word)
    return words


def is_strong(hit: SearchHit, words: Sequence[str], floor: float) -> bool:
    if hit.vector_score is not None and hit.vector_score >= floor:
        return True
    if not words or hit.bm25_score is None:
        return False
    text = f"{hit.file_path}\n{hit.symbol}\n{hit.content}".lower()
    return all(word in text for word in words)


def only_weak_matches(query: str, hits: Sequence[SearchHit]) -> bool:
    """True when ``hits`` are not empty and none of the first ``CHECKED_HITS`` is strong."""
    if not hits:
        return False
    floor = float(getattr(settings, "REPO_SEARCH_STRONG_SIMILARITY", STRONG_SIMILARITY))
    words = query_words(query)
    return not any(is_strong(hit, words, floor) for hit in hits[:CHECKED_HITS])
