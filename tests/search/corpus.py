"""Small indexed corpora for search tests: the factory (``tests.factories``) and model clients.

``Piece``, ``SourceDoc``, ``index_generation`` and ``indexed_repository`` are the one factory's,
re-exported here where the search tests have always found them."""

from __future__ import annotations

from llm import get_chat, get_embedder
from llm.config import ModelSettings
from tests.factories import Piece, SourceDoc, index_generation, indexed_repository

__all__ = [
    "Piece",
    "SourceDoc",
    "index_generation",
    "indexed_repository",
    "local_embedder",
    "no_chat",
    "server_chat",
]


def local_embedder():  # type: ignore[no-untyped-def]
    """The bundled MiniLM model, for real."""
    return get_embedder(ModelSettings())


def no_chat():  # type: ignore[no-untyped-def]
    return get_chat(ModelSettings(chat_provider="none"))


def server_chat(url: str, timeout: float = 5.0):  # type: ignore[no-untyped-def]
    """A chat client for the test model server (Ollama wire protocol), no retries."""
    return get_chat(
        ModelSettings(
            chat_provider="ollama",
            chat_model="llama3.2",
            base_url=url,
            timeout=timeout,
            connect_timeout=1.0,
            max_retries=0,
        )
    )
