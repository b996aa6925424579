"""The model layer: every embedding and chat call in reposearch goes through here.

    from llm import get_embedder, get_chat, ModelUnavailable

    vectors = get_embedder().embed(texts)          # (n, dim) float32, L2-normalised
    answer = get_chat().chat(messages, max_tokens=200, timeout=10)

Nothing outside this package knows which provider (local, ollama, openai) is in use.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from llm.errors import (
    ChatUnavailable,
    ModelBusy,
    ModelError,
    ModelResponseError,
    ModelUnavailable,
)

if TYPE_CHECKING:
    from llm.chat_providers import Chat
    from llm.config import ModelSettings
    from llm.providers import Embedder

__all__ = [
    "ChatUnavailable",
    "ModelBusy",
    "ModelError",
    "ModelResponseError",
    "ModelUnavailable",
    "current_space_key",
    "get_chat",
    "get_embedder",
    "get_embedder_for_space",
    "get_reranker",
    "load_local_models",
]

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_embedders: dict[ModelSettings, Embedder] = {}
_chats: dict[ModelSettings, Chat] = {}
_rerankers: dict[ModelSettings, Any] = {}
T = TypeVar("T")


def _kept(store: dict[ModelSettings, T], cfg: ModelSettings, build: Callable[..., T]) -> T:
    """``build(cfg)``, kept in ``store`` while the configuration stays (a few kept at most)."""
    with _lock:
        found = store.get(cfg)
        if found is None:
            if len(store) > 8:
                store.clear()
            found = store[cfg] = build(cfg)
    return found


def _effective() -> ModelSettings:
    from llm.config import effective_settings

    return effective_settings()


def get_embedder(settings: ModelSettings | None = None) -> Embedder:
    """The embedder of the configuration in force (cached while it does not change).

    The returned object has ``embed(texts)``, ``model``, ``dim``, ``provider`` and
    ``space_key``; vectors of different ``space_key`` values must never be compared.
    """
    from llm.providers import build_embedder

    return _kept(_embedders, settings or _effective(), build_embedder)


def release_local_models() -> bool:
    """Free the built-in embedding model's memory in this process (a worker that has nothing
    left to embed): the embedders are dropped and the model is loaded again when next needed.
    True when a loaded model was freed."""
    from llm import onnx_models
    from llm.local_embedding import release_runtime

    with _lock:
        _embedders.clear()
        _rerankers.clear()
    released_onnx = onnx_models.release()
    return release_runtime() or released_onnx


def get_chat(settings: ModelSettings | None = None) -> Chat:
    """The chat client of the configuration in force.

    ``chat.available`` is False when no chat model is configured; its ``chat()`` then raises
    ``ChatUnavailable`` (a ``ModelUnavailable``), so callers can degrade in one place.
    """
    from llm.chat_providers import build_chat

    return _kept(_chats, settings or _effective(), build_chat)


def get_reranker(settings: ModelSettings | None = None) -> Any:
    """The cross-encoder of the configuration in force (cached while it does not change):
    ``score(query, passages, max_tokens=, timeout=)`` -> one relevance per passage
    (``llm.rerankers``)."""
    from llm.rerankers import build_reranker

    return _kept(_rerankers, settings or _effective(), build_reranker)


def load_local_models(*, cross_encoder: bool) -> list[str]:
    """Load the built-in models of the configuration in force in this process -- the embedding
    model, and the cross-encoder when ``cross_encoder`` -- so that the first search does not wait
    for them (a web process, at start). Models served elsewhere are not contacted. Returns what
    it loaded; a model that cannot load is logged and left to the searches, which say so."""
    cfg = _effective()
    loaded: list[str] = []
    wanted: list[tuple[str, Callable[[], object]]] = []
    if cfg.embedding_provider == "local":
        wanted.append((cfg.embedding_model, lambda: get_embedder(cfg).embed(["warm up"])))
    if cross_encoder and cfg.rerank_provider == "local":
        wanted.append(("cross-encoder", lambda: get_reranker(cfg).score("warm up", ["warm up"])))
    for name, load in wanted:
        try:
            load()
        except Exception as exc:  # missing carrier wheel, no onnxruntime, unreadable files
            logger.warning("could not load the built-in model %s at start: %s", name, exc)
        else:
            loaded.append(name)
    return loaded


def current_space_key() -> str:
    """The vector space of the embedding model in force, e.g. ``local/all-MiniLM-L6-v2/384``."""
    return _effective().space_key


def get_embedder_for_space(provider: str, model: str, dim: int, space_key: str) -> Embedder:
    """An embedder for an earlier vector space (the model in force before a change), so its
    stored vectors can keep serving queries until the current model's are complete."""
    import dataclasses

    base = _effective()
    long_text = space_key.rsplit("/", 1)[-1] if space_key.count("/") > 2 else "head"
    cfg = dataclasses.replace(
        base,
        embedding_provider=provider,
        embedding_model=model,
        embedding_dim=dim,
        long_text=long_text,
    )
    if cfg.space_key != space_key:
        raise ModelError(f"cannot rebuild the embedder of space {space_key!r}")
    return get_embedder(cfg)
