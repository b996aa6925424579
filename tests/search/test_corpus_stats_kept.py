"""The chunk counts of a generation's statistics are kept between searches, and a rebuild of
those statistics (same generation, new build) is seen by the next search."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.visibility import Viewer
from indexing.models import Chunk
from indexing.services.search_stats import refresh_search_stats
from search.retrieval.fulltext import corpus_stats
from search.retrieval.scope import scope_repositories
from tests.factories import indexed_repository

pytestmark = pytest.mark.django_db

SOURCE = [
    "def parse_header(line):\n    return line.split(':', 1)",
    "def retry(fn):\n    return fn()",
    "def acquire(pool):\n    return pool.pop()",
]


def test_counts_are_read_once_per_build_and_a_rebuild_is_seen() -> None:
    repository = indexed_repository("kept/counts", SOURCE)
    first = corpus_stats(scope_repositories(None, Viewer()), [])
    assert first.documents == Chunk.objects.filter(repository=repository).count() == 3
    with CaptureQueriesContext(connection) as captured:
        again = corpus_stats(scope_repositories(None, Viewer()), [])
    assert len(captured.captured_queries) == 1  # the scope's statement only
    assert (again.documents, again.total_length) == (first.documents, first.total_length)

    Chunk.objects.filter(repository=repository, content__contains="fn()").delete()
    refresh_search_stats(repository.pk)  # the same generation's statistics, built again
    rebuilt = corpus_stats(scope_repositories(None, Viewer()), [])
    assert rebuilt.documents == 2 and rebuilt.total_length < first.total_length
    assert not rebuilt.computed_on_the_fly
