"""The effective model configuration: environment settings overlaid by the ``ModelConfig`` row.

``PUT /api/config`` writes the row; every process (web workers, Celery workers) sees the change
within ``CHECK_INTERVAL_SECS`` without a restart: the merged result is cached per process and
re-read only when the row's ``updated_at`` changes (one cheap indexed query at most every
interval). The base URL and the API key come from the environment only.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from llm.errors import display_url
from llm.http import Endpoint
from llm.local_embedding import LOCAL_MODEL_DIM, LOCAL_MODEL_NAME
from llm.local_models import embedding_model, local_model_names

logger = logging.getLogger(__name__)

CHAT_PROVIDERS = ("ollama", "openai", "none")
EMBEDDING_PROVIDERS = ("local", "ollama", "openai")
LONG_TEXT_STRATEGIES = ("head", "windows")
MAX_EMBEDDING_DIM = 16000  # pgvector's limit for the vector type
CHECK_INTERVAL_SECS = 1.0


@dataclass(frozen=True)
class ModelSettings:
    """Everything the model layer needs to build an embedder and a chat client."""

    chat_provider: str = "none"
    chat_model: str = ""
    embedding_provider: str = "local"
    embedding_model: str = LOCAL_MODEL_NAME
    embedding_dim: int = LOCAL_MODEL_DIM
    base_url: str = "http://localhost:11434"
    api_key: str | None = None
    timeout: float = 30.0
    connect_timeout: float = 3.0
    max_retries: int = 2
    embed_batch_size: int = 32
    long_text: str = "head"
    max_windows: int = 8
    context_tokens: int = 8192  # the chat model's context window (LLM_CONTEXT_TOKENS)
    rerank_provider: str = "local"  # the cross-encoder: in-process, or "server" (/v1/rerank)
    rerank_model: str = ""
    rerank_base_url: str = ""  # empty: base_url

    def __repr__(self) -> str:  # the key must not leak through a repr in a log or traceback
        fields = {k: v for k, v in self.__dict__.items() if k != "api_key"}
        fields["api_key"] = "set" if self.api_key else None
        fields["base_url"] = display_url(self.base_url)
        return f"ModelSettings({fields})"

    @property
    def space_key(self) -> str:
        """Names the vector space: vectors with different keys are never compared."""
        model = self.embedding_model
        if self.embedding_provider == "local":  # an alias names the same model
            model = getattr(embedding_model(model), "name", model)
        key = f"{self.embedding_provider}/{model}/{self.embedding_dim}"
        # Mean-of-windows vectors of long texts differ from head-only ones.
        if self.embedding_provider == "local" and self.long_text != "head":
            key += f"/{self.long_text}"
        return key

    def endpoint(self) -> Endpoint:
        return Endpoint(
            provider="",
            base_url=self.base_url,
            api_key=self.api_key,
            connect_timeout=self.connect_timeout,
            read_timeout=self.timeout,
            max_retries=self.max_retries,
        )


def validate_overrides(values: dict[str, Any], base: ModelSettings) -> dict[str, str]:
    """Field errors of ``base`` overlaid with ``values`` (empty when the result is usable)."""
    merged = overlay(base, values)
    errors: dict[str, str] = {}
    if merged.chat_provider not in CHAT_PROVIDERS:
        errors["provider"] = f"unknown chat provider; use one of {', '.join(CHAT_PROVIDERS)}"
    if merged.embedding_provider not in EMBEDDING_PROVIDERS:
        errors["embedding_provider"] = (
            f"unknown embedding provider; use one of {', '.join(EMBEDDING_PROVIDERS)}"
        )
    if merged.chat_provider in ("ollama", "openai") and not merged.chat_model.strip():
        errors["chat_model"] = "a chat model name is required with a chat provider"
    if not merged.embedding_model.strip():
        errors["embedding_model"] = "an embedding model name is required"
    dim = merged.embedding_dim
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 < dim <= MAX_EMBEDDING_DIM:
        errors["embedding_dim"] = f"must be a positive integer up to {MAX_EMBEDDING_DIM}"
    if merged.embedding_provider == "local":
        model = embedding_model(merged.embedding_model)
        if model is None:
            errors["embedding_model"] = f"the local provider ships {local_model_names()}"
        elif dim != model.dim:
            errors["embedding_dim"] = f"{model.name} has {model.dim} dimensions"
    return errors


def overlay(base: ModelSettings, values: dict[str, Any]) -> ModelSettings:
    """``base`` with the non-null override ``values`` applied (keys as in the API)."""
    mapping = {
        "provider": "chat_provider",
        "chat_model": "chat_model",
        "embedding_provider": "embedding_provider",
        "embedding_model": "embedding_model",
        "embedding_dim": "embedding_dim",
    }
    changes = {mapping[k]: v for k, v in values.items() if k in mapping and v is not None}
    merged = replace(base, **changes)
    # Switching to the local provider without naming a model means the bundled one.
    if (
        merged.embedding_provider == "local"
        and "embedding_model" not in values
        and base.embedding_provider != "local"
    ):
        merged = replace(merged, embedding_model=LOCAL_MODEL_NAME, embedding_dim=LOCAL_MODEL_DIM)
    model = embedding_model(merged.embedding_model)
    if model is not None and merged.embedding_provider == "local":
        merged = replace(merged, embedding_model=model.name)
    return merged


def settings_from_env() -> ModelSettings:
    """The configuration from ``django.conf.settings`` alone (no database)."""
    from django.conf import settings as dj

    provider = str(getattr(dj, "LLM_PROVIDER", "none") or "none")
    if provider == "local":  # the local provider has no chat model
        provider = "none"
    return ModelSettings(
        chat_provider=provider,
        chat_model=str(getattr(dj, "LLM_CHAT_MODEL", "") or ""),
        embedding_provider=str(getattr(dj, "LLM_EMBEDDING_PROVIDER", "local")),
        embedding_model=str(getattr(dj, "LLM_EMBEDDING_MODEL", LOCAL_MODEL_NAME)),
        embedding_dim=int(getattr(dj, "LLM_EMBEDDING_DIM", LOCAL_MODEL_DIM)),
        base_url=str(getattr(dj, "LLM_BASE_URL", "http://localhost:11434")),
        api_key=getattr(dj, "LLM_API_KEY", None) or None,
        timeout=float(getattr(dj, "LLM_TIMEOUT_SECS", 30.0)),
        connect_timeout=float(getattr(dj, "LLM_CONNECT_TIMEOUT_SECS", 3.0)),
        max_retries=int(getattr(dj, "LLM_MAX_RETRIES", 2)),
        embed_batch_size=int(getattr(dj, "LLM_EMBED_BATCH_SIZE", 32)),
        long_text=str(getattr(dj, "LLM_EMBED_LONG_TEXT", "head")),
        max_windows=int(getattr(dj, "LLM_EMBED_MAX_WINDOWS", 8)),
        context_tokens=int(getattr(dj, "LLM_CONTEXT_TOKENS", 8192)),
        rerank_provider=str(getattr(dj, "LLM_RERANK_PROVIDER", "local")),
        rerank_model=str(getattr(dj, "LLM_RERANK_MODEL", "") or ""),
        rerank_base_url=str(getattr(dj, "LLM_RERANK_BASE_URL", "") or ""),
    )


class _Cache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.settings: ModelSettings | None = None
        self.version: Any = None
        self.env_key: ModelSettings | None = None
        self.checked_at = float("-inf")


_cache = _Cache()


def invalidate() -> None:
    """Forget the cached configuration (after a PUT in this process, and in tests)."""
    with _cache.lock:
        _cache.settings = None
        _cache.checked_at = float("-inf")


def _read_row() -> tuple[Any, dict[str, Any]]:
    from llm.models import ModelConfig

    row = (
        ModelConfig.objects.filter(pk=ModelConfig.SINGLETON_ID)
        .values("updated_at", *ModelConfig.OVERRIDE_FIELDS)
        .first()
    )
    if row is None:
        return None, {}
    version = row.pop("updated_at")
    return version, {k: v for k, v in row.items() if v not in ("", None)}


def effective_settings() -> ModelSettings:
    """The configuration in force now: environment settings overlaid by the database row."""
    env = settings_from_env()
    now = time.monotonic()
    with _cache.lock:
        fresh = _cache.settings is not None and _cache.env_key == env
        if fresh and now - _cache.checked_at < CHECK_INTERVAL_SECS:
            return _cache.settings  # type: ignore[return-value]
    try:
        version, overrides = _read_row()
    except Exception as exc:  # no table yet, no database access (tests), database down
        logger.debug("model config row unreadable, using environment settings: %s", exc)
        return env
    with _cache.lock:
        if _cache.settings is None or _cache.env_key != env or _cache.version != version:
            merged = overlay(env, overrides)
            if validate_overrides(overrides, env):
                # An env change can make an old override invalid: fall back to the env.
                logger.warning("ignoring stored model config overrides that no longer validate")
                merged = env
            _cache.settings, _cache.version, _cache.env_key = merged, version, env
        _cache.checked_at = now
        return _cache.settings
