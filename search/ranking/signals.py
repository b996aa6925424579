"""Ranking signals applied to the fused candidates before fusion's cut (``SearchTuning.fusion_top``).

Fusion (``search.ranking.fusion``) only sees ranks. Two signals need to know what a candidate *is*:

- **intent**: a question that is about tests or documentation (its words say so: "tests for
  ...", "docs on ...", see ``search.retrieval.query.query_intent``) wants those chunks first, not merely
  among the code. Every candidate of the intended kind gains ``intent_boost`` times the best
  fused score, so with a boost of 1 or more the intended kind leads and keeps its own fusion
  order; code follows. Scope flags set explicitly (``include_docs: true``, the UI's
  checkboxes) only include, they do not prefer.
- **exact name**: when the whole query is one identifier (``take_while_m_n``,
  ``ScriptInfo.load_app``), a candidate whose symbol *is* that name (or ends with it:
  ``VerboseError.from_error_kind`` for ``from_error_kind``) gains ``exact_symbol_boost`` times
  the best score -- the definition ranks above its callers, tests and longer namesakes; for a
  qualified query the enclosing definition (``Needed`` for ``Needed::Size``) gains half.

Every signal is off when its weight is 0; the order is then exactly fusion's. The words a
question shares with a chunk's file name and symbol (``content_words``, ``path_words``,
``same_word``) are features of the learned model (``search.ranking.learned``), not signals here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from indexing.identifiers import identifier_words, split_identifier
from search.ranking.fusion import FusedCandidate
from search.retrieval.facts import ChunkFacts
from search.retrieval.query import STOPWORDS, identifier_query


def apply_signals(
    candidates: Sequence[FusedCandidate],
    facts: dict[int, ChunkFacts],
    *,
    prefer_tests: bool = False,
    prefer_docs: bool = False,
    intent_boost: float = 0.0,
    identifier: str | None = None,
    exact_symbol_boost: float = 0.0,
    top: int = 30,
) -> tuple[list[FusedCandidate], dict[str, int]]:
    """The best ``top`` candidates after the signals, re-ranked; and what each signal touched.

    Candidates without facts (no longer live) are dropped.
    """
    live = [c for c in candidates if c.chunk_id in facts]
    touched = {"intended": 0, "exact_name": 0}
    if live and intent_boost > 0 and (prefer_tests or prefer_docs):
        lead = max(c.score for c in live)
        for candidate in live:
            fact = facts[candidate.chunk_id]
            if (prefer_tests and fact.is_test) or (prefer_docs and fact.is_doc):
                candidate.score += intent_boost * lead
                touched["intended"] += 1
    if live and identifier and exact_symbol_boost > 0:
        lead = max(c.score for c in live)
        container = identifier.rsplit(".", 1)[0] if "." in identifier else None
        for candidate in live:
            symbol = facts[candidate.chunk_id].symbol
            if not symbol:
                continue
            if symbol == identifier or symbol.endswith("." + identifier):
                candidate.score += exact_symbol_boost * lead
                touched["exact_name"] += 1
            elif symbol == container:
                candidate.score += 0.5 * exact_symbol_boost * lead
                touched["exact_name"] += 1
    ordered = sorted(live, key=lambda c: (-c.score, c.best_rank, c.chunk_id))[:top]
    for rank, candidate in enumerate(ordered, start=1):
        candidate.rank = rank
    return ordered, touched


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def path_words(path: str) -> set[str]:
    """The words of a file's name (``test_sessions.py`` -> test, session), singular. ``path``
    is ``repo-id/path``."""
    return set(_words_named(tuple(path.split("/")[1:][-1:])))


@functools.lru_cache(maxsize=65536)  # the same names come back in every search (and copy)
def _words_named(named: tuple[str, ...]) -> frozenset[str]:
    words: set[str] = set()
    for part in named:
        stem = part.split(".", 1)[0] or part
        words.update(_singular(w) for w in split_identifier(stem) if len(w) >= 3)
    return frozenset(words)


def content_words(query: str) -> list[str]:
    """A prose query's words that may name a file (no stop words, 3+ letters); none for a
    one-identifier query (the exact-name signal handles those)."""
    if identifier_query(query) is not None:
        return []
    return [w for w in identifier_words(query, unique=True) if len(w) >= 3 and w not in STOPWORDS]


@functools.lru_cache(maxsize=65536)
def same_word(a: str, b: str) -> bool:
    """Two words that differ by an ending only (``registered`` / ``register``, ``blueprints``
    / ``blueprint``, ``signed`` / ``sign``): they share all but two letters of the shorter one,
    and at least four (so short words collide: ``read`` / ``ready``)."""
    if a == b:
        return True
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= max(4, min(len(a), len(b)) - 2) and abs(len(a) - len(b)) <= 3
