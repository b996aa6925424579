"""Switching the embedding model: re-embedding is queued, and vectors of two models never mix."""

from __future__ import annotations

import pytest

import llm
from indexing.models import ChunkEmbedding, IndexJob, JobKind, Repository
from indexing.services.repositories import queue_missing_embeddings
from indexing.services.stages.embed import run_embed
from indexing.services.vectors import embed_repository, space_for
from llm.config import invalidate
from tests import factories
from tests.accounts_support import token_client

SOURCE = [
    "def parse_http_header(line):\n    return line.split(':', 1)",
    "def retry_with_backoff(fn, attempts):\n    return fn()",
    "class ConnectionPool:\n    size = 10",
]


@pytest.fixture
def indexed_repository(db) -> Repository:
    return factories.indexed_repository(
        "a/b", SOURCE, url="https://example.org/a/b.git", path="src/app.py", symbol_prefix="s"
    )


@pytest.mark.django_db
def test_a_new_embedding_model_gets_its_own_vectors_and_the_old_ones_stay(
    indexed_repository, settings, model_server
) -> None:
    local = llm.get_embedder()
    local_space = space_for(local)
    embed_repository(indexed_repository, local_space, local.embed, batch_size=32)
    assert ChunkEmbedding.objects.filter(space=local_space).count() == 3
    assert queue_missing_embeddings() == []  # nothing is missing for the model in force

    settings.LLM_EMBEDDING_PROVIDER = "ollama"
    settings.LLM_EMBEDDING_MODEL = "nomic-embed-text"
    settings.LLM_EMBEDDING_DIM = 384  # same dimension, different model: still a different space
    settings.LLM_BASE_URL = model_server.url
    invalidate()
    try:
        queued = queue_missing_embeddings()
        assert [job.kind for job in queued] == [JobKind.REEMBED]
        run_embed(queued[0].pk)

        job = IndexJob.objects.get(pk=queued[0].pk)
        assert job.state == "done", (job.error, job.failures)
        remote_space = space_for(llm.get_embedder())
        assert remote_space.pk != local_space.pk
        assert remote_space.key == "ollama/nomic-embed-text/384"
        assert ChunkEmbedding.objects.filter(space=remote_space).count() == 3
        # The previous model's vectors keep serving until an operator removes them.
        assert ChunkEmbedding.objects.filter(space=local_space).count() == 3
        assert model_server.requests_to("/api/embed"), "the remote model was really called"
        assert queue_missing_embeddings() == []
    finally:
        invalidate()


@pytest.mark.django_db
def test_an_unreachable_model_leaves_the_repository_searchable_and_says_so(
    indexed_repository, settings, model_server
) -> None:
    settings.LLM_EMBEDDING_PROVIDER = "ollama"
    settings.LLM_EMBEDDING_MODEL = "nomic-embed-text"
    settings.LLM_BASE_URL = model_server.url
    model_server.stop()  # connection refused from now on
    invalidate()
    try:
        (job,) = queue_missing_embeddings()
        run_embed(job.pk, final_attempt=True)
        job.refresh_from_db()
        assert job.state == "completed_with_errors"
        assert any(failure["stage"] == "embedding" for failure in job.failures)
        indexed_repository.refresh_from_db()
        assert indexed_repository.status == "ready"
        assert indexed_repository.embedded_count == 0
        assert indexed_repository.vectors_missing == 3
    finally:
        invalidate()


@pytest.mark.django_db
def test_the_vector_limit_stops_embedding_and_says_how_many_chunks_lack_a_vector(
    indexed_repository, settings
) -> None:
    settings.REPO_SEARCH_MAX_VECTOR_ENTRIES = 2
    (job,) = queue_missing_embeddings()
    run_embed(job.pk)
    job.refresh_from_db()
    assert job.state == "completed_with_errors"
    reasons = " ".join(failure["reason"] for failure in job.failures)
    assert "REPO_SEARCH_MAX_VECTOR_ENTRIES=2" in reasons
    assert "1 chunks have no vector" in reasons
    assert ChunkEmbedding.objects.count() == 2
    indexed_repository.refresh_from_db()
    assert indexed_repository.embedded_count == 2


@pytest.mark.django_db
def test_repositories_show_that_they_need_reembedding_after_a_model_change(
    indexed_repository, settings, model_server
) -> None:

    local = llm.get_embedder()
    embed_repository(indexed_repository, space_for(local), local.embed, batch_size=32)
    body = token_client().get("/api/repos").json()[0]
    assert (body["vectors"], body["vectors_missing"], body["needs_reembedding"]) == (3, 0, False)

    settings.LLM_EMBEDDING_PROVIDER = "ollama"
    settings.LLM_EMBEDDING_MODEL = "nomic-embed-text"
    settings.LLM_BASE_URL = model_server.url
    invalidate()
    try:
        space_for(llm.get_embedder())
        body = token_client().get(f"/api/repos/{indexed_repository.pk}").json()
        assert (body["vectors"], body["vectors_missing"], body["needs_reembedding"]) == (0, 3, True)
    finally:
        invalidate()
