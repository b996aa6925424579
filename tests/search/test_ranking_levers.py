"""The opt-in ranking levers of issue 16's third round (all off by default, docs/evaluation.md):
soft scope, the partial docs preference of usage questions, file-name and name-word matches,
check questions searching the tests."""

from __future__ import annotations

import pytest

from search.ranking.fusion import FusedCandidate
from search.ranking.signals import (
    ChunkFacts,
    apply_signals,
    content_words,
    same_word,
    soft_scope_demotion,
    widened_scope,
)
from search.retrieval.scope import resolve_scope
from search.types import SearchRequest


def _candidates(*scores: float) -> list[FusedCandidate]:
    return [
        FusedCandidate(chunk_id=i, score=score, rank=i, best_rank=i)
        for i, score in enumerate(scores, start=1)
    ]


FACTS = {
    1: ChunkFacts("r/src/app.py", False, False, "app.run"),
    2: ChunkFacts("r/src/sessions.py", False, False, "securecookiesessioninterface.save_session"),
    3: ChunkFacts("r/tests/test_app.py", True, False, "test_run"),
    4: ChunkFacts("r/README.md", False, True, ""),
}


def test_defaults_leave_the_fusion_order_alone() -> None:
    ordered, _ = apply_signals(_candidates(0.10, 0.08, 0.07, 0.06), FACTS)
    assert [c.chunk_id for c in ordered] == [1, 2, 3, 4]


def test_soft_scope_searches_what_was_left_out_by_default_and_demotes_it() -> None:
    scope = resolve_scope(SearchRequest(query="where is the app started"))
    demote = soft_scope_demotion(scope, 0.5)
    assert demote == {"tests": 0.5, "docs": 0.5}
    wide = widened_scope(scope, demote)
    assert wide.include_tests and wide.include_docs
    # An explicit exclusion is not softened.
    explicit = resolve_scope(SearchRequest(query="where", include_tests=False, include_docs=False))
    assert soft_scope_demotion(explicit, 0.5) == {}
    ordered, _ = apply_signals(
        _candidates(0.06, 0.05, 0.10, 0.09), FACTS, demote_tests=0.5, demote_docs=0.5
    )
    assert [c.chunk_id for c in ordered] == [1, 2, 3, 4]  # test 0.05, doc 0.045 now follow


def test_usage_docs_boost_lifts_docs_partway_only_for_usage_questions() -> None:
    ordered, _ = apply_signals(
        _candidates(0.10, 0.08, 0.07, 0.07), FACTS, usage_docs=True, usage_docs_boost=0.25
    )
    # 0.07 + 0.25 x 0.10 = 0.095: past the other code, not past the best candidate.
    assert [c.chunk_id for c in ordered] == [1, 4, 2, 3]
    unchanged, _ = apply_signals(_candidates(0.10, 0.08, 0.07, 0.07), FACTS, usage_docs_boost=0.25)
    assert [c.chunk_id for c in unchanged] == [1, 2, 3, 4]


def test_file_name_and_symbol_words_of_the_question_lift_their_chunks() -> None:
    words = content_words("where are sessions saved")
    assert words == ["sessions", "saved"]
    by_path, touched = apply_signals(
        _candidates(0.10, 0.08, 0.07, 0.06), FACTS, query_words=words, path_boost=0.25
    )
    assert [c.chunk_id for c in by_path][:2] == [2, 1] and touched["path_named"] == 1
    by_name, touched = apply_signals(
        _candidates(0.10, 0.08, 0.07, 0.06), FACTS, query_words=words, name_boost=0.5
    )
    assert by_name[0].chunk_id == 2 and touched["name_words"] == 1
    assert content_words("save_session") == []  # one identifier: the exact-name signal's job


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("registered", "register", True),
        ("blueprints", "blueprint", True),
        ("signed", "sign", True),
        ("session", "sessions", True),
        ("route", "router", True),
        ("parse", "parser", True),
        ("header", "headers", True),
        ("reads", "roads", False),
        ("handler", "handle", True),
        ("construct", "constant", False),
        ("app", "apply", False),
    ],
)
def test_same_word_ignores_endings_only(a: str, b: str, same: bool) -> None:
    assert same_word(a, b) is same


def test_check_questions_search_the_tests_only_when_asked_to() -> None:
    query = "is it verified that a PUT to a GET-only endpoint gets a 405"
    assert not resolve_scope(SearchRequest(query=query)).include_tests
    scope = resolve_scope(SearchRequest(query=query, tests_for_check_questions=True))
    assert scope.include_tests and scope.tests_reason == "check question ('verified')"
    assert not scope.prefer_tests  # included, not preferred


@pytest.mark.django_db
def test_soft_scope_brings_the_test_back_below_the_code_and_says_so() -> None:
    from search.executor import SearchExecutor
    from tests.search.corpus import Piece, SourceDoc, indexed_repository
    from tests.search.test_intent_ranking import CODE, TEST

    indexed_repository(
        "confkit",
        [
            SourceDoc("confkit/env.py", [Piece(CODE, "load_config_from_env")]),
            SourceDoc(
                "tests/test_env.py", [Piece(TEST, "test_prefixed_environment")], is_test=True
            ),
        ],
    )
    query = "load config from env with a prefix"
    plain = SearchExecutor().run(SearchRequest(query=query, use_vector=False, left_out_weight=0))
    assert [h.file_path for h in plain.hits] == ["confkit/env.py"]
    soft = SearchExecutor().run(SearchRequest(query=query, use_vector=False, soft_scope=0.5))
    assert [h.file_path for h in soft.hits] == ["confkit/env.py", "tests/test_env.py"]
    scope = next(s for s in soft.trace if s.name == "scope")
    assert scope.detail["soft_scope"] == {"tests": 0.5, "docs": 0.5}
    assert soft.hits[1].fusion_score < soft.hits[0].fusion_score
