"""The hand-set signals leave fusion's order alone when no question word asks otherwise; the
question words the learned model compares with a chunk's file name and symbol
(``content_words``, ``same_word``: ``search.retrieval.query``)."""

from __future__ import annotations

import pytest

from search.ranking.fusion import FusedCandidate
from search.ranking.ordering import apply_signals
from search.retrieval.hydrate import ChunkFacts
from search.retrieval.query import content_words, path_words, same_word


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


def test_the_question_words_that_may_name_a_file() -> None:
    assert content_words("where are sessions saved") == ["sessions", "saved"]
    assert content_words("save_session") == []  # one identifier: the exact-name signal's job
    assert path_words("r/src/test_sessions.py") == {"test", "session"}  # the file's name only


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
