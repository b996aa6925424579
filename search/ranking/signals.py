"""Ranking signals applied to the fused candidates before fusion's cut (``SearchRequest.fusion_top``).

Fusion (``search.ranking.fusion``) only sees ranks. Two signals need to know what a candidate *is*:

- **intent**: a question that is about tests or documentation (its words say so: "tests for
  ...", "docs on ...", see ``search.retrieval.scope.query_intent``) wants those chunks first, not merely
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

Both are off when their weight is 0; the order is then exactly fusion's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection

from search.ranking.fusion import FusedCandidate
from search.retrieval.query import normalise_symbol
from search.retrieval.scope import LIVE_CHUNKS_SQL

FILE_EVIDENCE_CHUNKS = 3


@dataclass(frozen=True)
class ChunkFacts:
    path: str
    is_test: bool
    is_doc: bool
    symbol: str = ""  # normalised (search.retrieval.query.normalise_symbol)


_FACTS_SQL = """
    SELECT c.id, c.repository_id::text || '/' || c.path, c.is_test, c.is_doc, c.symbol
    FROM indexing_chunk c {live}
    WHERE c.id = ANY(%s)
"""


def chunk_facts(chunk_ids: Sequence[int], live: str = LIVE_CHUNKS_SQL) -> dict[int, ChunkFacts]:
    """Path (per repository) and test/doc flags of live chunks, by id (``live``: the scope's
    live-chunks join, ``search.retrieval.scope.live_chunks_sql``)."""
    if not chunk_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_FACTS_SQL.format(live=live), [list(chunk_ids)])
        return {
            int(cid): ChunkFacts(path, is_test, is_doc, normalise_symbol(symbol or ""))
            for cid, path, is_test, is_doc, symbol in cursor.fetchall()
        }


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
    top: int = 30,
) -> tuple[list[FusedCandidate], dict[str, int]]:
    """The best ``top`` candidates after the signals, re-ranked; and what each signal touched.

    Candidates without facts (no longer live) are dropped.
    """
    live = [c for c in candidates if c.chunk_id in facts]
    touched = {"intended": 0, "file_lifted": 0, "exact_name": 0}
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
