"""Fixtures of the tests/reposearch tests: one ``make up`` stack for two of its modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.make_up_stack import SharedMakeUp


@pytest.fixture(scope="session")
def shared_make_up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedMakeUp]:
    """One ``make up`` for test_make_up.py and test_make_up_restarts.py (``SharedMakeUp``)."""
    shared = SharedMakeUp(tmp_path_factory)
    try:
        yield shared
    finally:
        shared.stop()
