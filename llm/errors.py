"""Errors of the model layer. Messages name the provider and base URL, never a secret.

``ModelUnavailable``: the server could not be reached or did not answer in time (connection
refused, timeouts, retries exhausted on 429/5xx) -- callers degrade (lexical search only,
skip rerank). ``ModelResponseError``: it answered, but with something unusable (garbage JSON,
wrong shape, wrong vector dimension, a 4xx such as an unknown model or a bad API key).
``ChatUnavailable``: no chat model is configured at all. ``ModelBusy``: this process already
has ``LLM_MAX_CONCURRENT_CALLS`` chat calls running and none finished within the queue wait.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def display_url(url: str) -> str:
    """``url`` without any ``user:password@`` part, safe for messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def redact(text: str, secrets: list[str | None]) -> str:
    """``text`` with every non-trivial secret replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


class ModelError(Exception):
    """Base class: something went wrong talking to an embedding or chat model."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        base_url: str = "",
        status: int | None = None,
    ) -> None:
        self.provider = provider
        self.base_url = display_url(base_url) if base_url else ""
        self.status = status
        where = f"{provider} at {self.base_url}" if self.base_url else provider
        super().__init__(f"{where}: {message}" if where else message)


class ModelUnavailable(ModelError):
    """The model server could not be reached or did not answer in time."""


class ModelResponseError(ModelError):
    """The model server answered with something unusable."""


class ChatUnavailable(ModelUnavailable):
    """No chat model is configured (``LLM_PROVIDER=none``)."""


class ModelBusy(ModelUnavailable):
    """Every chat-call slot of this process stayed taken (``LLM_MAX_CONCURRENT_CALLS``)."""
