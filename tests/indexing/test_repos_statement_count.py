"""``GET /api/repos`` (what the repositories page polls) runs as many SQL statements for ten
repositories as for one: the current job, vector and summary counts come from one selector that
annotates, not from queries per repository."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import llm
from indexing.models import IndexJob, JobKind, JobState, Repository
from indexing.services.vectors import embed_repository, space_for
from tests import factories
from tests.accounts_support import token_client

pytestmark = pytest.mark.django_db

SOURCE = [
    "def parse_http_header(line):\n    return line.split(':', 1)",
    "def retry_with_backoff(fn, attempts):\n    return fn()",
    "class ConnectionPool:\n    size = 10",
]


def _add_repositories(first: int, count: int) -> list[Repository]:
    """Repositories of every shape the list shows: embedded or not, contextual summaries on or
    off, an unfinished job older than a finished one, only finished jobs, no job at all."""
    embedder = llm.get_embedder()
    space = space_for(embedder)
    added = []
    for number in range(first, first + count):
        repository = factories.indexed_repository(
            f"count/r{number:02}", SOURCE, url=f"https://example.org/count/r{number}.git"
        )
        shape = number % 4
        if shape in (0, 1):
            embed_repository(repository, space, embedder.embed, batch_size=32)
        if shape in (0, 2):
            Repository.objects.filter(pk=repository.pk).update(contextual_summaries=True)
        if shape != 3:
            earlier = timezone.now() - timedelta(minutes=10)
            old = IndexJob.objects.create(repository=repository, state=JobState.DONE)
            IndexJob.objects.filter(pk=old.pk).update(created_at=earlier)
        if shape == 0:  # running, and older than a re-index that already finished
            running = IndexJob.objects.create(
                repository=repository, state=JobState.EMBEDDING, chunks_total=3
            )
            IndexJob.objects.filter(pk=running.pk).update(
                created_at=timezone.now() - timedelta(minutes=5)
            )
            IndexJob.objects.create(
                repository=repository, kind=JobKind.INCREMENTAL, state=JobState.DONE
            )
        added.append(repository)
    return added


@pytest.fixture(autouse=True)
def _model_config_stays_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model configuration is re-read once a second; on a loaded machine that second can
    fall between the warm-up and the counted request (an extra statement that is not per row)."""
    import llm.config

    monkeypatch.setattr(llm.config, "CHECK_INTERVAL_SECS", 3600.0)


def _listed() -> tuple[int, list[dict]]:
    client = token_client()
    client.get("/api/repos")  # warm: settings and model caches are not the point
    with CaptureQueriesContext(connection) as captured:
        response = client.get("/api/repos")
    assert response.status_code == 200
    return len(captured.captured_queries), response.json()


def test_listing_repositories_does_not_query_per_repository() -> None:
    _add_repositories(0, 1)
    one, listed_one = _listed()
    _add_repositories(1, 9)
    ten, listed_ten = _listed()
    assert (len(listed_one), len(listed_ten)) == (1, 10)
    assert ten == one


def test_the_list_shows_each_repositorys_current_job_and_counts() -> None:
    added = _add_repositories(0, 4)
    _, listed = _listed()
    by_name = {item["name"]: item for item in listed}
    running = IndexJob.objects.get(repository=added[0], state=JobState.EMBEDDING)
    facts = [
        (
            by_name[r.name]["current_job"] and by_name[r.name]["current_job"]["id"],
            by_name[r.name]["vectors"],
            by_name[r.name]["vectors_missing"],
            by_name[r.name]["needs_reembedding"],
            by_name[r.name]["contextual_summary_calls"],
        )
        for r in added
    ]
    only_done = [IndexJob.objects.get(repository=r).pk for r in added[1:3]]
    assert facts == [
        (running.pk, 3, 0, False, 3),  # the unfinished job, though a newer one finished
        (only_done[0], 3, 0, False, 0),
        (only_done[1], 0, 3, True, 3),
        (None, 0, 3, True, 0),
    ]
    assert by_name[added[0].name]["current_job"]["state"] == "embedding"
