"""Chat clients for the ``none``, ``ollama`` and ``openai`` providers.

The wire formats: Ollama's ``/api/chat`` and the OpenAI-compatible ``/v1/chat/completions``.
``chat`` asks for one whole answer, ``stream`` / ``astream`` for its pieces as the model writes
them (``llm.streaming``). ``schema`` asks for JSON output constrained to a JSON schema: Ollama's
``format``, OpenAI's ``response_format`` ``json_schema`` (a server that refuses that is asked
with llama-cpp-python's ``json_object`` + ``schema``, then plain JSON mode; the first form it
accepts is remembered). Every chat call holds a slot of ``llm.limits`` while it runs.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from llm import http, streaming
from llm.config import ModelSettings
from llm.errors import ChatUnavailable, ModelError, ModelResponseError
from llm.limits import async_call_slot, call_slot
from llm.providers import endpoint_for

Message = dict[str, str]


class Chat:
    """``chat(messages, max_tokens=..., timeout=...)`` -> the assistant's text."""

    provider = "none"
    available = True

    def __init__(self, cfg: ModelSettings) -> None:
        self.model = cfg.chat_model
        self.context_tokens = cfg.context_tokens
        self.read_timeout = cfg.timeout
        self.endpoint = endpoint_for(cfg, self.provider) if self.provider != "none" else None

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


CHATS: dict[str, type[Chat]] = {"none": DisabledChat, "ollama": OllamaChat, "openai": OpenAIChat}


def build_chat(cfg: ModelSettings) -> Chat:
    """A chat client for ``cfg`` (no I/O)."""
    try:
        return CHATS[cfg.chat_provider](cfg)
    except KeyError:
        raise ValueError(f"unknown chat provider {cfg.chat_provider!r}") from None
