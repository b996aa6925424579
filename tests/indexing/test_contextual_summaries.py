"""Contextual retrieval: opt-in per repository, its cost shown first, summaries embedded."""

from __future__ import annotations

import pytest

import llm
import llm.config
from indexing.models import Chunk, ChunkEmbedding, IndexJob, JobKind, Repository
from indexing.services.stages.embed import run_embed
from indexing.services.vectors import embed_repository, space_for
from tests import factories
from tests.accounts_support import token_client

SOURCE = [
    "def parse_http_header(line):\n    return line.split(':', 1)",
    "def retry_with_backoff(fn, attempts):\n    return fn()",
    "class ConnectionPool:\n    size = 10",
]


@pytest.fixture
def repository(db) -> Repository:
    return factories.indexed_repository(
        "c/d", SOURCE, url="https://example.org/c/d.git", path="src/net.py", symbol_prefix="s"
    )


@pytest.fixture
def chat_model(settings, model_server):  # type: ignore[no-untyped-def]
    settings.LLM_PROVIDER = "ollama"
    settings.LLM_CHAT_MODEL = "llama3.2"
    settings.LLM_BASE_URL = model_server.url
    llm.config.invalidate()
    yield model_server
    llm.config.invalidate()


def reembed_job(repository: Repository) -> IndexJob:
    return IndexJob.objects.create(repository=repository, kind=JobKind.REEMBED, chunks_total=3)


def test_opting_in_shows_the_cost_in_calls_before_anything_runs(repository) -> None:
    client = token_client()
    body = client.get(f"/api/repos/{repository.pk}").json()
    assert (body["contextual_summaries"], body["contextual_summary_calls"]) == (False, 0)
    response = client.patch(
        f"/api/repos/{repository.pk}", {"contextual_summaries": True}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert (
        response.json()["contextual_summaries"],
        response.json()["contextual_summary_calls"],
    ) == (True, 3)
    bad = client.patch(
        f"/api/repos/{repository.pk}", {"contextual_summaries": "maybe"}, format="json"
    )
    assert bad.status_code == 400
    assert (
        client.patch(f"/api/repos/{repository.pk}", {"colour": "red"}, format="json").status_code
        == 400
    )


def test_summaries_are_written_one_call_per_chunk_and_embedded(repository, chat_model) -> None:
    local = llm.get_embedder()
    space = space_for(local)
    embed_repository(repository, space, local.embed, batch_size=32)  # vectors without summaries
    before = set(ChunkEmbedding.objects.filter(space=space).values_list("id", flat=True))

    chat_model.chat_handler = lambda messages: "  Parses or retries network things.\nextra line"
    Repository.objects.filter(pk=repository.pk).update(contextual_summaries=True)
    job = reembed_job(repository)
    run_embed(job.pk)

    job.refresh_from_db()
    assert job.state == "done", (job.error, job.failures)
    assert (job.summaries_total, job.summaries_done) == (3, 3)
    assert len(chat_model.requests_to("/api/chat")) == 3
    summaries = set(Chunk.objects.filter(repository=repository).values_list("summary", flat=True))
    assert summaries == {"Parses or retries network things."}
    after = set(ChunkEmbedding.objects.filter(space=space).values_list("id", flat=True))
    assert len(after) == 3 and not (after & before), "vectors were recomputed with the summary"
    prompt = chat_model.requests_to("/api/chat")[0].body["messages"][-1]["content"]
    assert "src/net.py" in prompt


def test_without_a_reachable_chat_model_chunks_are_embedded_without_summaries(
    repository, chat_model
) -> None:
    chat_model.stop()
    Repository.objects.filter(pk=repository.pk).update(contextual_summaries=True)
    job = reembed_job(repository)
    run_embed(job.pk)
    job.refresh_from_db()
    assert job.state == "completed_with_errors"
    assert any(
        f["stage"] == "summaries" and "3 of 3 chunks got no summary" in f["reason"]
        for f in job.failures
    )
    assert ChunkEmbedding.objects.filter(chunk__repository=repository).count() == 3
    assert not Chunk.objects.filter(repository=repository).exclude(summary="").exists()
