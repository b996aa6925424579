"""Embedders for the ``local``, ``ollama`` and ``openai`` providers.

Only this module and ``llm.chat_providers`` (the chat clients) know the wire formats: Ollama's
``/api/embed`` and the OpenAI-compatible ``/v1/embeddings`` here (the base URL may or may not
end in ``/v1``). Every vector that leaves here is float32, finite,
L2-normalised and of the configured dimension; anything else is a ``ModelResponseError`` and
nothing is returned.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llm import http
from llm.config import ModelSettings
from llm.errors import ModelResponseError

Message = dict[str, str]


def _ollama_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/api")] if root.endswith("/api") else root


def _openai_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root if root.endswith("/v1") else root + "/v1"


def endpoint_for(cfg: ModelSettings, provider: str) -> http.Endpoint:
    root = _ollama_root(cfg.base_url) if provider == "ollama" else _openai_root(cfg.base_url)
    return http.Endpoint(
        provider=provider,
        base_url=root,
        api_key=cfg.api_key if provider == "openai" else None,
        connect_timeout=cfg.connect_timeout,
        read_timeout=cfg.timeout,
        max_retries=cfg.max_retries,
    )


def check_vectors(
    rows: Any, *, expected_count: int, dim: int, provider: str, base_url: str
) -> np.ndarray:
    """``rows`` as a (count, dim) float32 L2-normalised array, or ModelResponseError."""
    kw: dict[str, Any] = {"provider": provider, "base_url": base_url}
    if not isinstance(rows, list):
        raise ModelResponseError("embedding response has no list of vectors", **kw)
    if len(rows) != expected_count:
        raise ModelResponseError(
            f"model returned {len(rows)} vectors for {expected_count} texts", **kw
        )
    if rows and not all(isinstance(r, list) for r in rows):
        raise ModelResponseError("embedding response holds something other than vectors", **kw)
    lengths = {len(r) for r in rows}
    if lengths - {dim}:
        got = sorted(lengths - {dim})[0]
        raise ModelResponseError(
            f"model returned {got}-dim vectors, expected {dim} (set the embedding dimension "
            "to match the model)",
            **kw,
        )
    try:
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), dim)
    except (TypeError, ValueError):
        raise ModelResponseError("embedding vectors hold non-numbers", **kw) from None
    if not np.isfinite(vectors).all():
        raise ModelResponseError("model returned vectors with NaN or infinite values", **kw)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ModelResponseError("model returned an all-zero vector", **kw)
    return vectors / norms


class Embedder:
    """``embed(texts)`` -> (n, dim) float32 L2-normalised vectors."""

    provider = ""

    def __init__(self, cfg: ModelSettings) -> None:
        self.model = cfg.embedding_model
        self.dim = cfg.embedding_dim
        self.space_key = cfg.space_key
        self.batch_size = max(1, cfg.embed_batch_size)
        self.timeout = cfg.timeout

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.space_key}>"

    def embed(self, texts: list[str], *, timeout: float | None = None) -> np.ndarray:
        """Vectors of ``texts`` in order; ``timeout`` bounds each batch's request."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._embed_batch(texts[i : i + self.batch_size], timeout or self.timeout)
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(parts)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Vectors of search queries (an asymmetric model marks them; others embed as text)."""
        return self.embed(texts)

    def _embed_batch(self, texts: list[str], timeout: float) -> np.ndarray:
        raise NotImplementedError


class LocalEmbedder(Embedder):
    """An in-process model from a wheel (``llm.local_models``): MiniLM in our numpy runtime
    (``llm.local_embedding``), the others on onnxruntime (``llm.onnx_models``)."""

    provider = "local"

    def __init__(self, cfg: ModelSettings) -> None:
        from llm.local_models import local_model

        super().__init__(cfg)
        self.long_text = cfg.long_text
        self.max_windows = cfg.max_windows
        self.spec = local_model(cfg.embedding_model)

    def embed(self, texts: list[str], *, timeout: float | None = None) -> np.ndarray:
        return self._embed(texts, query=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, query=True)

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        if self.spec.runtime == "onnx":
            from llm.onnx_models import get_encoder

            vectors = get_encoder(self.spec).embed(
                list(texts), query=query, strategy=self.long_text, max_windows=self.max_windows
            )
        else:
            from llm.local_embedding import embed_texts

            vectors = embed_texts(
                list(texts),
                strategy=self.long_text,
                batch_size=self.batch_size,
                max_windows=self.max_windows,
            )
        if vectors.shape[1] != self.dim:  # a wrongly configured dimension
            raise ModelResponseError(
                f"model returned {vectors.shape[1]}-dim vectors, expected {self.dim}",
                provider=self.provider,
            )
        return vectors


class _RemoteEmbedder(Embedder):
    def __init__(self, cfg: ModelSettings) -> None:
        super().__init__(cfg)
        self.endpoint = endpoint_for(cfg, self.provider)

    def _check(self, rows: Any, count: int) -> np.ndarray:
        return check_vectors(
            rows,
            expected_count=count,
            dim=self.dim,
            provider=self.provider,
            base_url=self.endpoint.base_url,
        )

    def _shape_error(self, what: str) -> ModelResponseError:
        return ModelResponseError(what, provider=self.provider, base_url=self.endpoint.base_url)


class OllamaEmbedder(_RemoteEmbedder):
    provider = "ollama"

    def _embed_batch(self, texts: list[str], timeout: float) -> np.ndarray:
        data = http.request_json(
            self.endpoint,
            "POST",
            "/api/embed",
            {"model": self.model, "input": texts, "truncate": True},
            timeout=timeout,
        )
        if not isinstance(data, dict) or "embeddings" not in data:
            raise self._shape_error("/api/embed answer has no 'embeddings'")
        return self._check(data["embeddings"], len(texts))


class OpenAIEmbedder(_RemoteEmbedder):
    provider = "openai"

    def _embed_batch(self, texts: list[str], timeout: float) -> np.ndarray:
        data = http.request_json(
            self.endpoint,
            "POST",
            "/embeddings",
            {"model": self.model, "input": texts, "encoding_format": "float"},
            timeout=timeout,
        )
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise self._shape_error("/v1/embeddings answer has no 'data' list")
        # The spec orders by "index"; some servers do not keep request order.
        try:
            items = sorted(items, key=lambda i: int(i.get("index", 0)))
        except (TypeError, ValueError):
            raise self._shape_error("/v1/embeddings answer has a bad 'index'") from None
        return self._check([i.get("embedding") for i in items], len(texts))


EMBEDDERS: dict[str, type[Embedder]] = {
    "local": LocalEmbedder,
    "ollama": OllamaEmbedder,
    "openai": OpenAIEmbedder,
}


def build_embedder(cfg: ModelSettings) -> Embedder:
    """An embedder for ``cfg`` (no I/O: the local model loads on first use)."""
    try:
        return EMBEDDERS[cfg.embedding_provider](cfg)
    except KeyError:
        raise ValueError(f"unknown embedding provider {cfg.embedding_provider!r}") from None
