"""``GET/PUT /api/config`` and the effective configuration (env overlaid by the stored row)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

import llm
from llm import config
from llm.models import ModelConfig
from tests.accounts_support import token_client

pytestmark = pytest.mark.django_db

ENV = {
    "LLM_PROVIDER": "ollama",
    "LLM_EMBEDDING_PROVIDER": "local",
    "LLM_BASE_URL": "http://models.internal:11434",
    "LLM_CHAT_MODEL": "llama3.2",
    "LLM_EMBEDDING_MODEL": "all-MiniLM-L6-v2",
    "LLM_EMBEDDING_DIM": 384,
    "LLM_API_KEY": "sk-config-secret-0000",
}


@pytest.fixture(autouse=True)
def env_settings() -> Iterator[None]:
    with override_settings(**ENV):
        config.invalidate()
        yield
    config.invalidate()


@pytest.fixture
def api() -> APIClient:
    return token_client()


def test_get_shows_config_without_the_key(api: APIClient) -> None:
    response = api.get("/api/config")
    assert response.status_code == 200
    assert response.json() == {
        "provider": "ollama",
        "base_url": "http://models.internal:11434",
        "chat_model": "llama3.2",
        "embedding_provider": "local",
        "embedding_model": "all-MiniLM-L6-v2",
        "embedding_dim": 384,
        "embedding_space": "local/all-MiniLM-L6-v2/384",
        "api_key_set": True,
    }
    assert "sk-config-secret" not in response.content.decode()


def test_put_persists_and_applies_without_restart(api: APIClient) -> None:
    before = llm.get_embedder().space_key
    response = api.put(
        "/api/config",
        {
            "embedding_provider": "ollama",
            "embedding_model": "nomic-embed-text",
            "embedding_dim": 768,
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["embedding_space"] == "ollama/nomic-embed-text/768"
    assert body["embedding_space_changed"] is True
    assert ModelConfig.objects.get().embedding_model == "nomic-embed-text"
    embedder = llm.get_embedder()
    assert (embedder.provider, embedder.model, embedder.dim) == ("ollama", "nomic-embed-text", 768)
    assert embedder.space_key != before
    assert api.get("/api/config").json()["embedding_model"] == "nomic-embed-text"

    # Chat model change only: the vector space stays.
    response = api.put("/api/config", {"chat_model": "qwen2.5-coder"}, format="json")
    assert response.json()["embedding_space_changed"] is False
    assert llm.get_chat().model == "qwen2.5-coder"

    # Back to local: model and dim follow; null resets a field to the environment value.
    response = api.put(
        "/api/config", {"embedding_provider": "local", "chat_model": None}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["embedding_space"] == "local/all-MiniLM-L6-v2/384"
    assert response.json()["chat_model"] == "llama3.2"


def test_other_processes_pick_up_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    assert config.effective_settings().chat_provider == "ollama"
    # Another process writes the row; this one has a warm cache.
    ModelConfig.objects.update_or_create(pk=ModelConfig.SINGLETON_ID, defaults={"provider": "none"})
    monkeypatch.setattr(config, "CHECK_INTERVAL_SECS", 0.0)
    assert config.effective_settings().chat_provider == "none"
    assert llm.get_chat().available is False
    ModelConfig.objects.filter(pk=1).update(provider="openai", updated_at=timezone.now())
    assert config.effective_settings().chat_provider == "openai"


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"provider": "anthropic-magic"}, "provider", "not a valid choice"),
        ({"embedding_provider": "gpu"}, "embedding_provider", "not a valid choice"),
        ({"embedding_dim": 0}, "embedding_dim", "greater than or equal to 1"),
        ({"embedding_dim": "abc"}, "embedding_dim", "valid integer"),
        ({"embedding_dim": 1.5}, "embedding_dim", "valid integer"),
        (
            {"base_url": "http://evil.example:1"},
            "base_url",
            "read-only over the API; set LLM_BASE_URL",
        ),
        ({"api_key": "sk-new"}, "api_key", "LLM_API_KEY"),
        ({"temperature": 2}, "temperature", "unknown field"),
        (
            {"embedding_model": "nomic-embed-text"},
            "embedding_model",
            "ships all-MiniLM-L6-v2, bge-small-en-v1.5",
        ),
        ({"embedding_dim": 768}, "embedding_dim", "384 dimensions"),
    ],
)
def test_put_validation(api: APIClient, payload: dict, field: str, message: str) -> None:
    response = api.put("/api/config", payload, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert message in str(error), error
    assert field in str(error)
    assert not ModelConfig.objects.exists() or ModelConfig.objects.get().overrides() == {}


def test_put_accepts_get_output_back_unchanged(api: APIClient) -> None:
    body = api.get("/api/config").json()
    body["chat_model"] = "mistral"
    response = api.put("/api/config", body, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["chat_model"] == "mistral"


def test_put_rejects_non_object(api: APIClient) -> None:
    response = api.put("/api/config", ["provider"], format="json")
    assert response.status_code == 400
    response = api.put("/api/config", "{not json", content_type="application/json")
    assert response.status_code == 400
