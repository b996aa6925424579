"""Ranking signals applied to the fused candidates before fusion's cut (``SearchRequest.fusion_top``).

Fusion (``search.ranking.fusion``) only sees ranks. Two signals need to know what a candidate *is*:

- **intent**: a question that is about tests or documentation (its words say so: "tests for
  ...", "docs on ...", see ``search.retrieval.question_words.query_intent``) wants those chunks first, not merely
  among the code. Every candidate of the intended kind gains ``intent_boost`` times the best
  fused score, so with a boost of 1 or more the intended kind leads and keeps its own fusion
  order; code follows. Scope flags set explicitly (``include_docs: true``, the UI's
  checkboxes) only include, they do not prefer.
- **exact name**: when the whole query is one identifier (``take_while_m_n``,
  ``ScriptInfo.load_app``), a candidate whose symbol *is* that name (or ends with it:
  ``VerboseError.from_error_kind`` for ``from_error_kind``) gains ``exact_symbol_boost`` times
  the best score -- the definition ranks above its callers, tests and longer namesakes; for a
  qualified query the enclosing definition (``Needed`` for ``Needed::Size``) gains half.
- **file evidence** (``file_evidence`` > 0): several strong chunks of one file are evidence for
  that file, so each candidate gains ``file_evidence`` times the summed scores of the best
  ``FILE_EVIDENCE_CHUNKS`` other candidates of its file. Hits stay chunks.

Measured and off by default (``docs/evaluation.md``, issue 16 third round):

- **soft scope** (``demote_tests`` / ``demote_docs`` < 1): tests or docs that the scope would
  have left out are searched with the code and their fused score is multiplied by the factor.
- **usage docs** (``usage_docs_boost``): docs brought in by a usage question ("how do I ...")
  gain that share of the best score -- a partial preference.
- **file name** (``path_boost``): a prose question's content word that names the candidate's
  file (``sessions`` of ``src/flask/sessions.py``, plural or not) gains that share.

Every signal is off when its weight is 0; the order is then exactly fusion's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from indexing.identifiers import identifier_words, split_identifier
from search.ranking.fusion import FusedCandidate
from search.retrieval.facts import ChunkFacts
from search.retrieval.query import STOPWORDS, identifier_query
from search.retrieval.scope import LEFT_OUT_BY_DEFAULT
from search.types import ScopeApplied

FILE_EVIDENCE_CHUNKS = 3
PATH_DIRECTORIES = False  # path_boost: also the directory names, not only the file's stem
NAME_DOCS_ONLY = False  # name_boost: only documentation chunks (their symbol is the heading)


def apply_signals(
    candidates: Sequence[FusedCandidate],
    facts: dict[int, ChunkFacts],
    *,
    prefer_tests: bool = False,
    prefer_docs: bool = False,
    intent_boost: float = 0.0,
    file_evidence: float = 0.0,
    identifier: str | None = None,
    exact_symbol_boost: float = 0.0,
    demote_tests: float = 1.0,
    demote_docs: float = 1.0,
    usage_docs: bool = False,
    usage_docs_boost: float = 0.0,
    query_words: Sequence[str] = (),
    path_boost: float = 0.0,
    name_boost: float = 0.0,
    top: int = 30,
) -> tuple[list[FusedCandidate], dict[str, int]]:
    """The best ``top`` candidates after the signals, re-ranked; and what each signal touched.

    Candidates without facts (no longer live) are dropped.
    """
    live = [c for c in candidates if c.chunk_id in facts]
    touched = {"intended": 0, "file_lifted": 0, "exact_name": 0}
    if live and (demote_tests < 1 or demote_docs < 1):
        for candidate in live:
            fact = facts[candidate.chunk_id]
            if fact.is_test and demote_tests < 1:
                candidate.score *= demote_tests
            elif fact.is_doc and demote_docs < 1:
                candidate.score *= demote_docs
    if live and path_boost > 0 and query_words:
        lead = max(c.score for c in live)
        lifted = 0
        for candidate in live:
            named = _path_words(facts[candidate.chunk_id].path)
            if any(same_word(q, w) for q in query_words for w in named):
                candidate.score += path_boost * lead
                lifted += 1
        touched["path_named"] = lifted
    if live and file_evidence > 0:
        by_file: dict[str, list[float]] = {}
        for candidate in live:
            by_file.setdefault(facts[candidate.chunk_id].path, []).append(candidate.score)
        for scores in by_file.values():
            scores.sort(reverse=True)
        lifts: dict[int, float] = {}
        for candidate in live:
            scores = by_file[facts[candidate.chunk_id].path]
            others = list(scores)
            others.remove(candidate.score)
            lift = file_evidence * sum(others[:FILE_EVIDENCE_CHUNKS])
            if lift > 0:
                lifts[candidate.chunk_id] = lift
        for candidate in live:
            candidate.score += lifts.get(candidate.chunk_id, 0.0)
        touched["file_lifted"] = len(lifts)
    if live and intent_boost > 0 and (prefer_tests or prefer_docs):
        lead = max(c.score for c in live)
        for candidate in live:
            fact = facts[candidate.chunk_id]
            if (prefer_tests and fact.is_test) or (prefer_docs and fact.is_doc):
                candidate.score += intent_boost * lead
                touched["intended"] += 1
    if live and name_boost > 0 and query_words:
        asked = list(dict.fromkeys(query_words))
        lead = max(c.score for c in live)
        name_lifted = 0
        for candidate in live:
            symbol = facts[candidate.chunk_id].symbol
            if not symbol or (NAME_DOCS_ONLY and not facts[candidate.chunk_id].is_doc):
                continue
            words = [w for w in split_identifier(symbol) if len(w) >= 3]
            matched = sum(1 for q in asked if any(same_word(q, w) for w in words))
            if matched:
                candidate.score += name_boost * lead * matched / len(asked)
                name_lifted += 1
        touched["name_words"] = name_lifted
    if live and usage_docs and usage_docs_boost > 0 and not prefer_docs:
        lead = max(c.score for c in live)
        for candidate in live:
            if facts[candidate.chunk_id].is_doc:
                candidate.score += usage_docs_boost * lead
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


def _path_words(path: str) -> set[str]:
    """The words of a file's name (``test_sessions.py`` -> test, session), singular; with
    ``PATH_DIRECTORIES`` those of its directories too. ``path`` is ``repo-id/path``."""
    parts = path.split("/")[1:]
    return set(_words_named(tuple(parts if PATH_DIRECTORIES else parts[-1:])))


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


def soft_scope_demotion(scope: ScopeApplied, factor: float) -> dict[str, float]:
    """With ``factor`` > 0, the kinds the scope left out by default and the factor their fused
    score is multiplied by (they are then searched with the code); else empty."""
    if factor <= 0:
        return {}
    demote: dict[str, float] = {}
    if not scope.include_tests and scope.tests_reason == LEFT_OUT_BY_DEFAULT:
        demote["tests"] = factor
    if not scope.include_docs and scope.docs_reason == LEFT_OUT_BY_DEFAULT:
        demote["docs"] = factor
    return demote


def widened_scope(scope: ScopeApplied, demote: dict[str, float]) -> ScopeApplied:
    """``scope`` with the demoted kinds searched too."""
    if not demote:
        return scope
    return dataclasses.replace(
        scope,
        include_tests=scope.include_tests or "tests" in demote,
        include_docs=scope.include_docs or "docs" in demote,
    )


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
