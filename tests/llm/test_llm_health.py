"""``llm.health.model_status()``: cheap, cached, honest about what is loaded and reachable."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from llm import config, health
from llm.local_embedding import embed_texts
from tests.model_server import ModelServer


@pytest.fixture
def server() -> Iterator[ModelServer]:
    started = ModelServer().start()
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    config.invalidate()
    health.clear_cache()
    yield
    config.invalidate()
    health.clear_cache()


def test_local_embedding_and_no_chat() -> None:
    embed_texts(["load the model"])
    with override_settings(LLM_PROVIDER="none", LLM_EMBEDDING_PROVIDER="local"):
        status = health.model_status()
    assert status["embedding"] == {
        "provider": "local",
        "model": "all-MiniLM-L6-v2",
        "dim": 384,
        "space": "local/all-MiniLM-L6-v2/384",
        "loaded": True,
        "error": None,
    }
    assert status["chat"] == {"provider": "none", "model": None, "reachable": None, "error": None}


def test_remote_chat_and_embedding_reachable(server: ModelServer) -> None:
    with override_settings(
        LLM_PROVIDER="ollama",
        LLM_CHAT_MODEL="llama3.2",
        LLM_EMBEDDING_PROVIDER="ollama",
        LLM_EMBEDDING_MODEL="nomic-embed-text",
        LLM_EMBEDDING_DIM=768,
        LLM_BASE_URL=server.url,
    ):
        status = health.model_status()
        assert status["chat"]["reachable"] is True and status["chat"]["error"] is None
        assert status["embedding"]["loaded"] is True
        requests = len(server.requests)
        health.model_status()  # cached: no new request
        assert len(server.requests) == requests


def test_unreachable_chat_is_reported_quickly_without_retries(server: ModelServer) -> None:
    url = server.url
    server.stop()
    with override_settings(
        LLM_PROVIDER="openai",
        LLM_CHAT_MODEL="gpt-4o-mini",
        LLM_EMBEDDING_PROVIDER="local",
        LLM_BASE_URL=url,
        LLM_MAX_RETRIES=5,
    ):
        status = health.model_status()
    assert status["chat"]["reachable"] is False
    assert (
        "connection failed" in status["chat"]["error"]
        and "(gave up after 1 attempt)" in status["chat"]["error"]
    )


def test_missing_chat_model_is_reported(server: ModelServer) -> None:
    with override_settings(
        LLM_PROVIDER="ollama", LLM_CHAT_MODEL="not-pulled", LLM_BASE_URL=server.url
    ):
        status = health.model_status()
    assert status["chat"]["reachable"] is False
    assert "'not-pulled' is not available" in status["chat"]["error"]


def test_the_cross_encoder_is_reported_loaded_or_loadable() -> None:
    from llm.onnx_models import get_cross_encoder, release

    release()
    with override_settings(LLM_RERANK_PROVIDER="local"):
        before = health.model_status()["cross_encoder"]
        get_cross_encoder()
        health.clear_cache()
        after = health.model_status()["cross_encoder"]
    assert before == {"provider": "local", "model": "ms-marco-MiniLM-L-12-v2", "loaded": False,
                      "error": None, "available": True}  # fmt: skip
    assert after == {"provider": "local", "model": "ms-marco-MiniLM-L-12-v2", "loaded": True,
                     "error": None}  # fmt: skip
    with override_settings(LLM_RERANK_PROVIDER="server", LLM_RERANK_MODEL="bge-reranker"):
        health.clear_cache()
        served = health.model_status()["cross_encoder"]
    # a rerank server is judged by each search (its trace), not asked here
    assert served == {"provider": "server", "model": "bge-reranker", "loaded": None, "error": None}
