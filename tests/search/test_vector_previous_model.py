"""After the embedding model changes, a repository's earlier vectors keep serving vector search
until the new model's vectors are complete; vectors of the two models are never compared."""

from __future__ import annotations

import pytest

import llm
import llm.config
from indexing.models import IndexJob, JobKind
from indexing.services.repositories import queue_missing_embeddings
from indexing.services.stages.embed import run_embed
from indexing.services.vectors import embed_repository, space_for
from search.executor import SearchExecutor, SearchRequest
from tests import factories

SOURCE = [
    "def parse_http_header(line):\n    return line.split(':', 1)",
    "def retry_with_backoff(fn, attempts):\n    for _ in range(attempts):\n        fn()",
    "class ConnectionPool:\n    def acquire(self):\n        return self.free.pop()",
]


def vector_stage(result):  # type: ignore[no-untyped-def]
    return next(stage for stage in result.trace if stage.name == "vector")


@pytest.mark.django_db
def test_previous_model_serves_until_reembedding_completes(settings, model_server) -> None:
    repository = factories.indexed_repository("v/w", SOURCE, url="https://example.org/v/w.git")
    local = llm.get_embedder()
    local_space = space_for(local)
    embed_repository(repository, local_space, local.embed, batch_size=32)
    request = SearchRequest(query="pool of connections", limit=3, use_bm25=False)

    settings.LLM_EMBEDDING_PROVIDER = "ollama"
    settings.LLM_EMBEDDING_MODEL = "nomic-embed-text"
    settings.LLM_BASE_URL = model_server.url
    llm.config.invalidate()
    try:
        (job,) = queue_missing_embeddings()  # queued, not run yet
        during = SearchExecutor().run(request)
        stage = vector_stage(during)
        assert stage.status == "ran", stage.reason
        assert stage.detail["previous_spaces"] == {local_space.key: [str(repository.pk)]}
        assert during.hits and during.hits[0].symbol == "s2"  # the local model still answers
        assert not model_server.requests_to("/api/embed"), "the new model was not asked"

        run_embed(job.pk)
        assert IndexJob.objects.get(pk=job.pk).state == "done"
        after = SearchExecutor().run(request)
        stage = vector_stage(after)
        assert stage.status == "ran"
        assert "previous_spaces" not in stage.detail
        assert stage.detail["space"] == "ollama/nomic-embed-text/384"
        assert after.hits  # now from the new model's space
    finally:
        llm.config.invalidate()


@pytest.mark.django_db
def test_a_repository_being_reembedded_is_searched_with_its_earlier_vectors(
    settings, model_server
) -> None:
    repository = factories.indexed_repository("x/y", SOURCE, url="https://example.org/x/y.git")
    local = llm.get_embedder()
    local_space = space_for(local)
    embed_repository(repository, local_space, local.embed, batch_size=32)
    settings.LLM_EMBEDDING_PROVIDER = "ollama"
    settings.LLM_EMBEDDING_MODEL = "nomic-embed-text"
    settings.LLM_BASE_URL = model_server.url
    llm.config.invalidate()
    try:
        remote = llm.get_embedder()
        remote_space = space_for(remote)
        # One chunk already has a new vector, the re-embed job is still running.
        embed_repository(repository, remote_space, remote.embed, batch_size=32, max_vectors=1)
        IndexJob.objects.create(repository=repository, kind=JobKind.REEMBED, state="embedding")
        result = SearchExecutor().run(SearchRequest(query="retry", limit=3, use_bm25=False))
        stage = vector_stage(result)
        assert stage.detail["previous_spaces"] == {local_space.key: [str(repository.pk)]}
        assert stage.detail["spaces"].keys() == {local_space.key}
    finally:
        llm.config.invalidate()
