"""The process's query embeddings: a repeated query does not run the model again."""

from __future__ import annotations

import numpy as np
import pytest

from llm import get_embedder
from search.retrieval import vector_stage
from search.retrieval.vector_stage import embed_queries


class Counting:
    """The real local embedder, counting the texts it is asked to embed."""

    def __init__(self, space_key: str | None = None, fail: bool = False) -> None:
        self.inner = get_embedder()
        self.space_key = space_key or self.inner.space_key
        self.fail = fail
        self.texts: list[str] = []

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        if self.fail:
            raise RuntimeError("model down")
        self.texts.extend(texts)
        return self.inner.embed_queries(texts)


@pytest.fixture(autouse=True)
def _empty_cache():
    vector_stage.clear_query_vectors()
    yield
    vector_stage.clear_query_vectors()


def test_a_repeated_query_is_embedded_once_and_gives_the_same_vector():
    embedder = Counting()
    first = embed_queries(embedder, ["parse the config file", "open a socket"])
    again = embed_queries(embedder, ["open a socket", "parse the config file"])
    assert embedder.texts == ["parse the config file", "open a socket"]
    assert np.array_equal(first[0], again[1]) and np.array_equal(first[1], again[0])
    assert np.allclose(first, embedder.inner.embed(["parse the config file", "open a socket"]))
    assert vector_stage.query_vector_stats == {"hits": 2, "misses": 2}


def test_the_same_text_twice_in_one_call_is_embedded_once():
    embedder = Counting()
    vectors = embed_queries(embedder, ["retry on timeout", "retry on timeout"])
    assert embedder.texts == ["retry on timeout"]
    assert vectors.shape[0] == 2 and np.array_equal(vectors[0], vectors[1])


def test_spaces_do_not_share_vectors():
    current, other = Counting(), Counting(space_key="other/model/384")
    embed_queries(current, ["merge two sorted lists"])
    embed_queries(other, ["merge two sorted lists"])
    assert current.texts == other.texts == ["merge two sorted lists"]


def test_the_least_recently_used_query_is_dropped_past_the_budget(monkeypatch):
    monkeypatch.setattr(vector_stage._query_vectors, "budget", 2)
    embedder = Counting()
    for text in ("alpha", "beta", "alpha", "gamma"):  # "beta" is the oldest when "gamma" comes
        embed_queries(embedder, [text])
    embed_queries(embedder, ["alpha"])
    embed_queries(embedder, ["beta"])
    assert embedder.texts == ["alpha", "beta", "gamma", "beta"]
    assert len(vector_stage._query_vectors) == 2


def test_a_failed_embedding_is_not_kept_and_the_next_search_retries():
    with pytest.raises(RuntimeError, match="model down"):
        embed_queries(Counting(fail=True), ["read the manifest"])
    embedder = Counting()
    embed_queries(embedder, ["read the manifest"])
    assert embedder.texts == ["read the manifest"]


def test_kept_vectors_cannot_be_changed_by_a_caller():
    embedder = Counting()
    embed_queries(embedder, ["hash a password"])
    again = embed_queries(embedder, ["hash a password"])
    kept = vector_stage._query_vectors.get((embedder.space_key, "hash a password"))
    assert kept is not None and not kept.flags.writeable
    again[0][:] = 0.0  # the stacked result is the caller's own copy
    assert np.allclose(kept, embedder.inner.embed(["hash a password"])[0])
