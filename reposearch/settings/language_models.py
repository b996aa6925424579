"""Settings of the models: the chat model, the embedding model and the search's cross-encoder,
their servers, timeouts and budgets (``llm``, docs/operators/models.md). Part of ``base.py``,
which imports every name here; values come from ``env.py`` and are checked at start.
"""

from __future__ import annotations

from .env import (
    LOCAL_EMBEDDING_DIM,
    LOCAL_EMBEDDING_MODEL,
    PROVIDERS_CHAT,
    PROVIDERS_EMBEDDING,
    ConfigError,
    reader,
)

env = reader()

# --- Models (SPEC §6) --------------------------------------------------------------------------
LLM_PROVIDER = env.choice("LLM_PROVIDER", "ollama", PROVIDERS_CHAT)
LLM_EMBEDDING_PROVIDER = env.choice("LLM_EMBEDDING_PROVIDER", "local", PROVIDERS_EMBEDDING)
LLM_BASE_URL = env.url("LLM_BASE_URL", "http://localhost:11434", ("http", "https"))
LLM_CHAT_MODEL = env.text("LLM_CHAT_MODEL", "llama3.2")
_local_embeddings = LLM_EMBEDDING_PROVIDER == "local"
LLM_EMBEDDING_MODEL = env.text(
    "LLM_EMBEDDING_MODEL", LOCAL_EMBEDDING_MODEL if _local_embeddings else "nomic-embed-text"
)
LLM_EMBEDDING_DIM = env.positive_int(
    "LLM_EMBEDDING_DIM", LOCAL_EMBEDDING_DIM if _local_embeddings else 768
)
if _local_embeddings:
    from llm.local_models import embedding_model, local_model_names

    _model = embedding_model(LLM_EMBEDDING_MODEL)
    if _model is None:
        raise ConfigError(
            f"LLM_EMBEDDING_MODEL={LLM_EMBEDDING_MODEL!r}: the local provider ships "
            f"{local_model_names()}"
        )
    if _model.dim != LLM_EMBEDDING_DIM:
        raise ConfigError(
            f"LLM_EMBEDDING_DIM={LLM_EMBEDDING_DIM}: {_model.name} has {_model.dim} dimensions"
        )
LLM_API_KEY = env.optional("LLM_API_KEY")
# The search's cross-encoder: in-process (local) or a /v1/rerank server (llm/rerankers.py).
LLM_RERANK_PROVIDER = env.choice("LLM_RERANK_PROVIDER", "local", ("local", "server"))
LLM_RERANK_MODEL = env.text("LLM_RERANK_MODEL", "")
LLM_RERANK_BASE_URL = env.url("LLM_RERANK_BASE_URL", LLM_BASE_URL, ("http", "https"))
LLM_TIMEOUT_SECS = env.positive_float("LLM_TIMEOUT_SECS", 30.0)
LLM_CONNECT_TIMEOUT_SECS = env.positive_float("LLM_CONNECT_TIMEOUT_SECS", 3.0)
LLM_MAX_RETRIES = env.positive_int("LLM_MAX_RETRIES", 2)
LLM_EMBED_BATCH_SIZE = env.positive_int("LLM_EMBED_BATCH_SIZE", 32)
LLM_EMBED_LONG_TEXT = env.choice("LLM_EMBED_LONG_TEXT", "head", ("head", "windows"))
LLM_EMBED_MAX_WINDOWS = env.positive_int("LLM_EMBED_MAX_WINDOWS", 8)
REPO_SEARCH_ASK_TIMEOUT_SECS = env.positive_float("REPO_SEARCH_ASK_TIMEOUT_SECS", 60.0)
REPO_SEARCH_HYDE_TIMEOUT_SECS = env.positive_float("REPO_SEARCH_HYDE_TIMEOUT_SECS", 20.0)
# The chat model's context window in tokens: prompts are sized to it (Ollama is sent num_ctx).
LLM_CONTEXT_TOKENS = env.positive_int("LLM_CONTEXT_TOKENS", 8192)
# Chat calls this process sends at once; more wait up to LLM_QUEUE_WAIT_SECS, then "busy".
LLM_MAX_CONCURRENT_CALLS = env.positive_int("LLM_MAX_CONCURRENT_CALLS", 4)
LLM_QUEUE_WAIT_SECS = env.positive_float("LLM_QUEUE_WAIT_SECS", 10.0)
