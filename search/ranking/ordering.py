"""Ordering the fused candidates: two rule signals, then a learned linear model.

**Signals** (``apply_signals``). Fusion (``search.ranking.fusion``) only sees ranks. Two signals
need to know what a candidate *is*:

- **intent**: a question that is about tests or documentation (its words say so: "tests for
  ...", "docs on ...", see ``search.retrieval.query.query_intent``) wants those chunks first,
  not merely among the code. Every candidate of the intended kind gains ``intent_boost`` times the best
  fused score, so with a boost of 1 or more the intended kind leads and keeps its own fusion
  order; code follows. Scope flags set explicitly (``include_docs: true``, the UI's
  checkboxes) only include, they do not prefer.
- **exact name**: when the whole query is one identifier (``take_while_m_n``,
  ``ScriptInfo.load_app``), a candidate whose symbol *is* that name (or ends with it:
  ``VerboseError.from_error_kind`` for ``from_error_kind``) gains ``exact_symbol_boost`` times
  the best score -- the definition ranks above its callers, tests and longer namesakes; for a
  qualified query the enclosing definition (``Needed`` for ``Needed::Size``) gains half.

Every signal is off when its weight is 0; the order is then exactly fusion's.

**Learned order** (``learned_order``). The rules (RRF over the lists, left-out chunks at their
weight, the two signals) give the default order. With learned fusion on, those rules still decide *which* candidates there are (the
pool: every fused candidate before the cut to ``fusion_top``), and a linear model decides their
order: ``score = w . standardise(features)``, weights trained with a listwise softmax loss on the
tune half of the evaluation corpora (``bench/eval/ltr_train.py``; the weights, the features' means
and standard deviations and the script's settings are in ``learned_weights.json`` beside this
module). Nothing in the features is keyed to a word of our questions: they are the lists' ranks
and scores, what a chunk is (test, doc, definition, length), whether the question's own words name
the chunk's symbol or file, how many other candidates its file has, and a few shapes of the
question (length, a code token in it, a whole-identifier query, the scope's own decisions) crossed
with the chunk's kind. See ``FEATURES``; its measurement is on docs/benchmarks.md.

The candidates' ``score`` becomes ``exp(s - max s)`` (in (0, 1], so the rerank blend, which
divides by the best score, still works) and they are re-ranked; ties keep the default order.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from search.ranking.fusion import FusedCandidate, RankedList
from search.retrieval.hydrate import ChunkFacts
from search.retrieval.query import content_words, identifier_query, path_words, same_word
from search.retrieval.scope import LEFT_OUT_BY_DEFAULT
from search.types import ScopeApplied

WEIGHTS_PATH = Path(__file__).with_name("learned_weights.json")

FEATURES: tuple[str, ...] = (
    "default",  # the default order's score (fusion, left-out, signals) / the best one
    "default_rr",  # 1 / the default rank
    "ft_rr10",  # full-text: 10 / (10 + rank), rank among scoped + left-out chunks by BM25
    "ft_rr60",  # ... 60 / (60 + rank); both 0 when not in the full-text lists
    "ft_norm",  # BM25 / the best BM25 of the question
    "vec_rr10",  # vector: the same over cosine
    "vec_rr60",
    "vec_cos",  # cosine similarity
    "vec_gap",  # best cosine of the question - this one
    "is_test",
    "is_doc",
    "left_out_test",  # a test the scope left out by default (came back through left_out)
    "left_out_doc",
    "definition",  # a function / method / class ... (not a window, module or section)
    "log_lines",  # log(1 + lines) / 5
    "name_overlap",  # share of the question's content words in the chunk's symbol
    "path_overlap",  # a content word of the question names the chunk's file
    "exact_name",  # the whole query is this chunk's symbol (or its last part)
    "file_others",  # log(1 + other candidates of the same file)
    "file_best_other",  # best default score of another candidate of the same file / best
    "intent_match",  # the scope prefers this chunk's kind (the question asks for tests/docs)
    "usage_doc",  # a usage question ("how do I") and a doc chunk
    "qlen_doc",  # the question's length (content words / 12, at most 1) x is_doc
    "qlen_test",
    "code_token_doc",  # the question carries a code token (snake_case, camelCase, a.b) x is_doc
    "code_token_test",
    "code_token_name",  # ... x name_overlap
    "identifier_ft",  # a whole-identifier query x ft_rr10
    "best_rr10",  # max(ft_rr10, vec_rr10): a strong match in one list
    "qlen_ft",  # question length x ft_rr10 (long prose questions may lean on the vectors)
    "qlen_vec",  # question length x vec_rr10
)

_CODE_TOKEN = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|[a-z][A-Z]|[A-Za-z]\.[A-Za-z]|::|\(\)|`")
NOT_DEFINITIONS = frozenset({"", "window", "module", "section"})


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


@dataclass(frozen=True)
class QuestionShape:
    """What the features know about the question: its words and the scope's decisions."""

    query: str
    prefer_tests: bool = False
    prefer_docs: bool = False
    tests_left_out: bool = False  # tests were left out by default (so any test came back)
    docs_left_out: bool = False
    usage: bool = False  # the scope searched the docs because of a usage question


@dataclass(frozen=True)
class Model:
    weights: tuple[float, ...]
    means: tuple[float, ...]
    stds: tuple[float, ...]
    meta: dict[str, Any]

    def score(self, row: Sequence[float]) -> float:
        return sum(
            w * (x - m) / s
            for w, x, m, s in zip(self.weights, row, self.means, self.stds, strict=True)
        )

    def scores(self, rows: Sequence[Sequence[float]]) -> list[float]:
        """``score`` of each row: the same operations in the same order (each row's terms
        summed from the first), a feature at a time over every row."""
        if not rows:
            return []
        table = np.asarray(rows, dtype=np.float64)
        terms = np.asarray(self.weights) * (table - np.asarray(self.means)) / np.asarray(self.stds)
        total = np.zeros(len(rows), dtype=np.float64)
        for column in terms.T:
            total += column
        return [float(value) for value in total]


def load_model(path: Path = WEIGHTS_PATH) -> Model:
    data = json.loads(path.read_text())
    if tuple(data["features"]) != FEATURES:
        raise ValueError(f"{path}: trained on other features than search.ranking.learned")
    return Model(
        tuple(data["weights"]),
        tuple(data["means"]),
        tuple(max(s, 1e-9) for s in data["stds"]),
        dict(data.get("meta", {})),
    )


@lru_cache(maxsize=1)
def default_model() -> Model:
    return load_model()


def _merged_ranks(lists: Sequence[RankedList], method: str) -> dict[int, tuple[int, float]]:
    """chunk id -> (1-based rank, score) over the original query's lists of ``method`` (scoped
    and left-out together, by score: the rank the chunk would have had unscoped)."""
    best: dict[int, float] = {}
    for ranked_list in lists:
        if ranked_list.method != method or ranked_list.query_index != 0:
            continue
        for chunk_id, score in ranked_list.ranked:
            if chunk_id not in best or score > best[chunk_id]:
                best[chunk_id] = score
    ordered = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return {cid: (rank, score) for rank, (cid, score) in enumerate(ordered, start=1)}


def features(
    pool: Sequence[FusedCandidate],
    lists: Sequence[RankedList],
    facts: dict[int, ChunkFacts],
    shape: QuestionShape,
) -> list[list[float]]:
    """One row of ``FEATURES`` per candidate of ``pool`` (the default order, best first)."""
    if not pool:
        return []
    fulltext = _merged_ranks(lists, "fulltext")
    vector = _merged_ranks(lists, "vector")
    best_bm25 = max((s for _, s in fulltext.values()), default=0.0) or 1.0
    best_cos = max((s for _, s in vector.values()), default=0.0)
    lead = max(c.score for c in pool) or 1.0
    words = content_words(shape.query)
    asked = list(dict.fromkeys(words))
    identifier = identifier_query(shape.query)
    qlen = min(len(asked), 12) / 12.0
    code_token = 1.0 if _CODE_TOKEN.search(shape.query) else 0.0
    by_file: dict[str, list[tuple[float, int]]] = {}
    for candidate in pool:
        by_file.setdefault(facts[candidate.chunk_id].path, []).append(
            (candidate.score, candidate.chunk_id)
        )
    rows: list[list[float]] = []
    for position, candidate in enumerate(pool, start=1):
        fact = facts[candidate.chunk_id]
        is_test = 1.0 if fact.is_test else 0.0
        is_doc = 1.0 if fact.is_doc else 0.0
        ft = fulltext.get(candidate.chunk_id)
        vec = vector.get(candidate.chunk_id)
        name_overlap = 0.0
        if asked and fact.symbol:
            symbol_words = [w for w in _split(fact.symbol) if len(w) >= 3]
            matched = sum(1 for q in asked if any(same_word(q, w) for w in symbol_words))
            name_overlap = matched / len(asked)
        named = path_words(fact.path)
        path_overlap = 1.0 if any(same_word(q, w) for q in asked for w in named) else 0.0
        exact = 0.0
        if identifier and (fact.symbol == identifier or fact.symbol.endswith("." + identifier)):
            exact = 1.0
        others = [s for s, cid in by_file[fact.path] if cid != candidate.chunk_id]
        ft_rr10 = 10.0 / (10.0 + ft[0]) if ft else 0.0
        vec_rr10 = 10.0 / (10.0 + vec[0]) if vec else 0.0
        intent = (shape.prefer_tests and fact.is_test) or (shape.prefer_docs and fact.is_doc)
        rows.append(
            [
                candidate.score / lead,
                1.0 / position,
                ft_rr10,
                60.0 / (60.0 + ft[0]) if ft else 0.0,
                ft[1] / best_bm25 if ft else 0.0,
                vec_rr10,
                60.0 / (60.0 + vec[0]) if vec else 0.0,
                vec[1] if vec else 0.0,
                best_cos - vec[1] if vec else 1.0,
                is_test,
                is_doc,
                is_test if shape.tests_left_out else 0.0,
                is_doc if shape.docs_left_out else 0.0,
                0.0 if fact.kind in NOT_DEFINITIONS or not fact.symbol else 1.0,
                math.log1p(max(fact.lines, 0)) / 5.0,
                name_overlap,
                path_overlap,
                exact,
                math.log1p(len(others)),
                max(others, default=0.0) / lead,
                1.0 if intent else 0.0,
                is_doc if shape.usage else 0.0,
                qlen * is_doc,
                qlen * is_test,
                code_token * is_doc,
                code_token * is_test,
                code_token * name_overlap,
                ft_rr10 if identifier else 0.0,
                max(ft_rr10, vec_rr10),
                qlen * ft_rr10,
                qlen * vec_rr10,
            ]
        )
    return rows


@lru_cache(maxsize=65536)  # the same symbols come back in every search (and copy)
def _split(symbol: str) -> tuple[str, ...]:
    from indexing.identifiers import split_identifier

    return tuple(split_identifier(symbol))


def learned_order(
    pool: Sequence[FusedCandidate],
    lists: Sequence[RankedList],
    facts: dict[int, ChunkFacts],
    shape: QuestionShape,
    *,
    model: Model | None = None,
    top: int | None = 30,
) -> list[FusedCandidate]:
    """``pool`` (the default order, best first, every candidate in ``facts``) re-ordered by the
    model, cut to ``top`` and re-ranked; each candidate's score becomes ``exp(s - max s)``."""
    pool = [c for c in pool if c.chunk_id in facts]
    if not pool:
        return []
    chosen = model or default_model()
    scores = chosen.scores(features(pool, lists, facts, shape))
    peak = max(scores)
    order = sorted(range(len(pool)), key=lambda i: (-scores[i], i))
    ordered = []
    for i in order[:top] if top is not None else order:
        candidate = pool[i]
        candidate.score = math.exp(scores[i] - peak)
        ordered.append(candidate)
    for rank, candidate in enumerate(ordered, start=1):
        candidate.rank = rank
    return ordered


def enabled(request_value: bool | None) -> bool:
    """``SearchTuning.learned_fusion``, or ``REPO_SEARCH_LEARNED_FUSION`` when it is None."""
    if request_value is not None:
        return request_value
    from django.conf import settings

    return bool(getattr(settings, "REPO_SEARCH_LEARNED_FUSION", False))


def question_shape(query: str, scope: ScopeApplied) -> QuestionShape:
    """The question's shape for ``features``, from the query and the scope the executor used."""
    return QuestionShape(
        query,
        prefer_tests=scope.prefer_tests,
        prefer_docs=scope.prefer_docs,
        tests_left_out=not scope.include_tests and scope.tests_reason == LEFT_OUT_BY_DEFAULT,
        docs_left_out=not scope.include_docs and scope.docs_reason == LEFT_OUT_BY_DEFAULT,
        usage=scope.docs_reason.startswith("usage question"),
    )
