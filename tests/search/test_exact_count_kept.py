"""A hybrid answer's count of exact matches (``search.exact.match_count.count_exact_matches``) is
kept for the generations it was made on: an identifier searched again is not counted again,
and a repository indexed anew is."""

from __future__ import annotations

import pytest
from django.db import transaction

import search.exact.match_count as match_count
from accounts.visibility import Viewer
from tests.factories import Piece, SourceDoc, index_generation, indexed_repository


def files(count: int) -> list[SourceDoc]:
    return [
        SourceDoc(f"src/m{i}.py", [Piece(f"def f{i}():\n    return retry_budget({i})\n", f"f{i}")])
        for i in range(count)
    ]


@pytest.fixture(autouse=True)
def _forget_counts() -> None:
    match_count.COUNTS.clear()


@pytest.mark.django_db(transaction=True)
def test_a_count_is_kept_until_a_repository_is_indexed_anew(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    repository = indexed_repository("kept-count", files(2))
    viewer = Viewer.everything()
    assert match_count.count_exact_matches("retry_budget", None, viewer) == (2, False)

    def not_again(*_args):  # type: ignore[no-untyped-def]
        raise AssertionError("counted again")

    with monkeypatch.context() as patched:
        patched.setattr(match_count, "run_exact", not_again)
        assert match_count.count_exact_matches("retry_budget", None, viewer) == (2, False)
        assert match_count.count_exact_matches("retry_budget", [repository.pk], viewer) == (
            2,
            False,
        )
    index_generation(repository, files(3))  # a new generation: counted again
    assert match_count.count_exact_matches("retry_budget", None, viewer) == (3, False)
    other = indexed_repository("other-count", files(1))  # another repository in scope
    assert match_count.count_exact_matches("retry_budget", None, viewer) == (4, False)
    assert match_count.count_exact_matches("retry_budget", [other.pk], viewer) == (1, False)


@pytest.mark.django_db(transaction=True)
def test_a_count_made_inside_a_transaction_is_not_kept() -> None:
    viewer = Viewer.everything()
    with transaction.atomic():
        indexed_repository("uncommitted-count", files(2))
        assert match_count.count_exact_matches("retry_budget", None, viewer) == (2, False)
        transaction.set_rollback(True)
    assert match_count.count_exact_matches("retry_budget", None, viewer) == (0, False)
