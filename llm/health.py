"""``model_status()`` for ``GET /api/health``: are the embedding model and the cross-encoder
loaded, is chat reachable?

Cheap by design: nothing is loaded or downloaded here, remote servers get one short request
with no retry, and the result is cached for ``CACHE_SECS`` per process.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from llm.errors import ModelError

if TYPE_CHECKING:
    from llm.local_models import LocalModel

CACHE_SECS = 5.0
PING_TIMEOUT_SECS = 2.0

_lock = threading.Lock()
_cached: tuple[float, Any, dict[str, Any]] | None = None


def _embedding_status(cfg: Any) -> dict[str, Any]:
    from llm import get_chat

    status: dict[str, Any] = {
        "provider": cfg.embedding_provider,
        "model": cfg.embedding_model,
        "dim": cfg.embedding_dim,
        "space": cfg.space_key,
        "loaded": False,
        "error": None,
    }
    if cfg.embedding_provider == "local":
        return {**status, **_local_status(cfg.embedding_model)}
    # A remote embedding model is "loaded" when its server answers and lists the model.
    probe = replace(cfg, chat_provider=cfg.embedding_provider, chat_model=cfg.embedding_model)
    try:
        get_chat(probe).ping(PING_TIMEOUT_SECS)
        status["loaded"] = True
    except ModelError as exc:
        status["error"] = str(exc)
    return status


def _local_status(name: str) -> dict[str, Any]:
    """Loaded, or else whether it can load (its files are installed): nothing is loaded here."""
    from llm import local_embedding, onnx_models
    from llm.local_models import local_model

    model = local_model(name)
    if model.runtime == "onnx":
        loaded, error = onnx_models.status(model.name)
    else:
        loaded, error = local_embedding.runtime_status()
    return _loaded_or_available(model, loaded, error)


def _loaded_or_available(model: LocalModel, loaded: bool, error: str | None) -> dict[str, Any]:
    if loaded or error is not None:
        return {"loaded": loaded, "error": error}
    from llm.local_models import ModelFilesMissing

    weights = "model.onnx" if model.runtime == "onnx" else "model.safetensors"
    try:
        present = (model.files() / weights).is_file()
    except ModelFilesMissing:
        present = False
    # Loads lazily on first use; say whether it can.
    missing = f"the files of {model.name} are not installed"
    return {"loaded": False, "error": None if present else missing, "available": present}


def _cross_encoder_status(cfg: Any) -> dict[str, Any]:
    """The built-in cross-encoder: loaded, or whether it can load; a rerank server is not
    asked (it is judged at each search, which says in its trace when it failed)."""
    if cfg.rerank_provider != "local":
        return {"provider": cfg.rerank_provider, "model": cfg.rerank_model or None,
                "loaded": None, "error": None}  # fmt: skip
    from llm import onnx_models
    from llm.local_models import CROSS_ENCODER

    loaded, error = onnx_models.status(CROSS_ENCODER.name)
    return {
        "provider": "local",
        "model": CROSS_ENCODER.name,
        **_loaded_or_available(CROSS_ENCODER, loaded, error),
    }


def _chat_status(cfg: Any) -> dict[str, Any]:
    from llm import get_chat

    status: dict[str, Any] = {
        "provider": cfg.chat_provider,
        "model": (cfg.chat_model or None) if cfg.chat_provider != "none" else None,
        "reachable": None,
        "error": None,
    }
    if cfg.chat_provider == "none":
        return status
    try:
        get_chat(cfg).ping(PING_TIMEOUT_SECS)
        status["reachable"] = True
    except ModelError as exc:
        status["reachable"] = False
        status["error"] = str(exc)
    return status


def model_status() -> dict[str, Any]:
    """``{"embedding": {...}, "cross_encoder": {...}, "chat": {...}}``; cached a few seconds per
    configuration."""
    global _cached
    from llm.config import effective_settings

    cfg = replace(effective_settings(), max_retries=0)
    now = time.monotonic()
    with _lock:
        if _cached and _cached[1] == cfg and now - _cached[0] < CACHE_SECS:
            return _cached[2]
        report = {
            "embedding": _embedding_status(cfg),
            "cross_encoder": _cross_encoder_status(cfg),
            "chat": _chat_status(cfg),
        }
        _cached = (time.monotonic(), cfg, report)
        return report


def clear_cache() -> None:
    """Forget the cached status (tests)."""
    global _cached
    with _lock:
        _cached = None
