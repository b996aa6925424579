"""Embedding in slices: a repository's embedding stops at its deadline and goes on where it
stopped, so the embed worker's time can pass between repositories; the result is the same as
embedding everything in one go. And an embed worker with nothing left to embed frees the model.

A deterministic embedder stands in for the model (each text's vector comes from its hash) so the
vectors of a sliced run can be compared with a one-shot run's exactly; the database is real.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest

import llm
from indexing.models import ChunkEmbedding, EmbeddingVector, IndexJob, JobState
from indexing.services.stages.embed import run_embed
from indexing.services.vectors import EmbedOutcome, embed_repository, embedding_space
from tests.factories import indexed_repository

pytestmark = pytest.mark.django_db

DIM = 8


def hashed_embedder(calls: list[int]):  # type: ignore[no-untyped-def]
    def embed(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        rows = []
        for text in texts:
            digest = hashlib.sha256(text.encode()).digest()
            rows.append(np.frombuffer(digest[: DIM * 4], dtype=np.uint32) / 2**32)
        return np.asarray(rows, dtype=np.float32)

    return embed


def functions(count: int, prefix: str) -> list[str]:
    return [f"def {prefix}_{n}(x):\n    return x + {n}\n" for n in range(count)]


def vectors_by_chunk(repository) -> dict[int, list[float]]:  # type: ignore[no-untyped-def]
    rows = ChunkEmbedding.objects.filter(repository=repository).select_related("embedding_vector")
    return {row.chunk_id: list(row.embedding_vector.vector) for row in rows}


def test_a_deadline_stops_after_a_batch_and_the_next_call_goes_on() -> None:
    repository = indexed_repository("sliced", functions(50, "step"))
    space = embedding_space("test", "hashed", DIM)
    calls: list[int] = []
    seen: list[EmbedOutcome] = []

    first = embed_repository(
        repository, space, hashed_embedder(calls), batch_size=8,
        on_progress=lambda so_far: seen.append(EmbedOutcome(**vars(so_far))),
        deadline=time.monotonic() - 1,  # already past: one batch, then stop
    )  # fmt: skip
    assert first.unfinished
    assert (first.embedded, calls) == (8, [8])
    assert seen[-1].embedded == 8
    assert ChunkEmbedding.objects.filter(repository=repository).count() == 8

    rounds = 1
    while True:
        outcome = embed_repository(
            repository, space, hashed_embedder(calls), batch_size=8,
            deadline=time.monotonic() - 1,
        )  # fmt: skip
        rounds += 1
        if not outcome.unfinished:
            break
    assert rounds == 7  # 50 chunks in batches of 8: seven slices, the last one short
    assert sum(calls) == repository.chunk_count == 50  # each text embedded exactly once
    assert ChunkEmbedding.objects.filter(repository=repository).count() == 50


def test_sliced_embedding_stores_what_one_go_stores() -> None:
    sliced = indexed_repository("sliced", functions(30, "calc"), symbol_prefix="a")
    whole = indexed_repository("whole", functions(30, "calc"), symbol_prefix="a")
    space = embedding_space("test", "hashed", DIM)
    calls: list[int] = []
    while embed_repository(
        sliced, space, hashed_embedder(calls), batch_size=4, deadline=time.monotonic() - 1
    ).unfinished:
        pass
    embed_repository(whole, space, hashed_embedder(calls), batch_size=4)
    by_symbol = {}
    for repository in (sliced, whole):
        vectors = vectors_by_chunk(repository)
        by_symbol[repository.name] = {
            chunk.symbol: vectors[chunk.pk] for chunk in repository.chunks.all()
        }
    assert len(by_symbol["sliced"]) == 30
    assert by_symbol["sliced"] == by_symbol["whole"]
    # The same texts in both repositories share their vectors: nothing stored twice.
    assert EmbeddingVector.objects.filter(space=space).count() == 30


def test_no_deadline_embeds_everything_in_one_call() -> None:
    repository = indexed_repository("whole", functions(20, "one"))
    space = embedding_space("test", "hashed", DIM)
    outcome = embed_repository(repository, space, hashed_embedder([]), batch_size=8)
    assert not outcome.unfinished
    assert outcome.embedded == 20


@pytest.fixture
def local(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.REPO_SEARCH_DATA_DIR = tmp_path / "data"
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    return tmp_path


def test_the_model_is_freed_once_nothing_is_left_to_embed(local) -> None:  # type: ignore[no-untyped-def]
    """An idle embed worker gave up ~250 MB only when replaced; now the last job's end frees the
    built-in model, and a job on its way to the embed stage keeps it loaded."""
    from llm.local_embedding import runtime_status
    from tests.indexing.real_run import fetch_and_index, mirror

    first_dir, second_dir = local / "one", local / "two"
    first_dir.mkdir()
    second_dir.mkdir()
    first = fetch_and_index(mirror(first_dir, {"a.py": "def a():\n    return 1\n"}), "acme/one")
    second = fetch_and_index(mirror(second_dir, {"b.py": "def b():\n    return 2\n"}), "acme/two")

    run_embed(first.pk)
    assert IndexJob.objects.get(pk=first.pk).state == JobState.DONE
    assert runtime_status()[0]  # the second job still waits to embed: kept

    run_embed(second.pk)
    assert IndexJob.objects.get(pk=second.pk).state == JobState.DONE
    assert not runtime_status()[0]  # nothing left: freed
    assert second.repository.chunk_count == 1
    # Loaded again when needed.
    again = llm.get_embedder().embed(["def b():\n    return 2\n"])
    assert again.shape == (1, 384)
    assert runtime_status()[0]
