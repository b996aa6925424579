"""Building small indexed corpora for search tests: real rows through the indexing store."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from indexing.models import Repository
from indexing.services.storing import FileToStore, StoredChunk, store_files, swap_generation
from llm import get_chat, get_embedder
from llm.config import ModelSettings
from search.retrieval.corpus_stats import refresh_search_stats


@dataclass
class Piece:
    """One chunk: what a test cares about."""

    content: str
    symbol: str = ""
    kind: str = "function"


@dataclass
class SourceDoc:
    path: str
    pieces: Sequence[Piece]
    language: str = "python"
    is_test: bool = False
    is_doc: bool = False


def to_store(doc: SourceDoc) -> FileToStore:
    chunks = []
    line = 1
    for index, piece in enumerate(doc.pieces):
        lines = piece.content.rstrip("\n").count("\n") + 1
        chunks.append(
            StoredChunk(
                index=index,
                start_line=line,
                end_line=line + lines - 1,
                symbol=piece.symbol,
                kind=piece.kind,
                content=piece.content,
            )
        )
        line += lines
    return FileToStore(
        path=doc.path,
        blob_sha=uuid.uuid4().hex,
        size_bytes=sum(len(p.content) for p in doc.pieces),
        language=doc.language,
        is_test=doc.is_test,
        is_doc=doc.is_doc,
        line_count=line - 1,
        chunks=chunks,
    )


def make_repository(name: str) -> Repository:
    return Repository.objects.create(
        url=f"https://example.com/{name}-{uuid.uuid4().hex[:6]}.git", name=name
    )


def index_generation(
    repository: Repository, docs: Sequence[SourceDoc], *, swap: bool = True, stats: bool = True
) -> Repository:
    """Store ``docs`` as the next generation; swap it in (and refresh statistics) unless told."""
    repository.refresh_from_db()
    generation = repository.active_generation + 1
    store_files(repository.pk, generation, [to_store(d) for d in docs])
    if swap:
        repository = swap_generation(repository.pk, generation, [], f"commit{generation}")
        if stats:
            refresh_search_stats(repository.pk)
    return repository


def indexed_repository(name: str, docs: Sequence[SourceDoc], *, stats: bool = True) -> Repository:
    return index_generation(make_repository(name), docs, stats=stats)


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
