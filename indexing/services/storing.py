"""Store a generation's files and chunks in bulk (``indexing.services.branch_generations`` then
swaps it in atomically).

Each chunk's ``tsvector`` is built in SQL from identifier-split text: symbol (weight A) and path
(weight B) rank above the body (weight D), so ``parseHttpHeader``, ``parse_http_header`` and
``parse http header`` all meet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db import connection, transaction

from indexing.identifiers import searchable_text
from indexing.models import Repository

INSERT_BATCH = 500  # chunks per committed batch ...
INSERT_BATCH_BYTES = 4 * 1024 * 1024  # ... or this much chunk text, whichever comes first

_INSERT_CHUNK = """
INSERT INTO indexing_chunk (
    repository_id, file_id, generation, "index", start_line, end_line, symbol, symbol_name, kind,
    language, path, is_test, is_doc, content, content_hash, calls, token_count, search_vector
) VALUES (
    %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
    setweight(to_tsvector('simple', %s), 'A')
    || setweight(to_tsvector('simple', %s), 'B')
    || setweight(to_tsvector('simple', %s), 'D')
)
"""

_INSERT_FILE = """
INSERT INTO indexing_sourcefile (
    repository_id, generation, path, language, blob_sha, size_bytes, line_count, is_test, is_doc
) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
RETURNING id
"""


@dataclass(frozen=True)
class StoredChunk:
    """What the store needs of a chunk (the chunker's pieces map onto it)."""

    index: int
    start_line: int
    end_line: int
    symbol: str
    kind: str
    content: str
    calls: Sequence[str] = ()
    is_test: bool = False  # a test inside a file that is not one (Rust `#[cfg(test)]`)


@dataclass(frozen=True)
class FileToStore:
    path: str
    blob_sha: str
    size_bytes: int
    language: str
    is_test: bool
    is_doc: bool
    line_count: int
    chunks: Sequence[StoredChunk]


def symbol_name(symbol: str) -> str:
    """The name a call site would use: ``Class.method`` -> ``method``."""
    return symbol.rsplit(".", 1)[-1][:256] if symbol else ""


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _path_text(path: str) -> str:
    return searchable_text(path.replace("/", " ").replace(".", " "))


def store_files(
    repository_id: UUID,
    generation: int,
    files: Iterable[FileToStore],
    *,
    on_batch: Callable[[int], None] | None = None,
    fence: Callable[[], None] | None = None,
    batch_chunks: int = INSERT_BATCH,
    batch_bytes: int = INSERT_BATCH_BYTES,
) -> int:
    """Insert files and their chunks for ``generation``; return the number of chunks written.

    ``files`` is consumed lazily (a generator that chunks as it goes keeps memory bounded):
    whole files are gathered until they reach ``batch_chunks`` chunks or ``batch_bytes`` of
    chunk text, so a batch holds at most that plus one file. Each batch commits on its own and
    then calls
    ``on_batch(chunks written so far)``, so a long store keeps reporting that it is alive (and can
    notice that its job ended). ``fence`` runs first inside each batch's transaction (the index
    stage refuses there to write for a job another run has taken over). Rows of a generation
    that is not live yet are invisible to search, and a run that stops half-way leaves rows the
    next run discards before writing its own.
    """
    written = 0
    pending: list[FileToStore] = []
    pending_chunks = pending_bytes = 0
    for stored in files:
        pending.append(stored)
        pending_chunks += len(stored.chunks)
        pending_bytes += sum(len(chunk.content) for chunk in stored.chunks)
        if pending_chunks >= batch_chunks or pending_bytes >= batch_bytes:
            written += _store_batch(repository_id, generation, pending, fence)
            pending, pending_chunks, pending_bytes = [], 0, 0
            if on_batch is not None:
                on_batch(written)
    if pending:
        written += _store_batch(repository_id, generation, pending, fence)
        if on_batch is not None:
            on_batch(written)
    return written


def _store_batch(
    repository_id: UUID,
    generation: int,
    files: Sequence[FileToStore],
    fence: Callable[[], None] | None = None,
) -> int:
    rows: list[tuple[Any, ...]] = []
    with transaction.atomic(), connection.cursor() as cursor:
        if fence is not None:
            fence()
        for stored in files:
            cursor.execute(
                _INSERT_FILE,
                [repository_id, generation, stored.path, stored.language, stored.blob_sha,
                 stored.size_bytes, stored.line_count, stored.is_test, stored.is_doc],
            )  # fmt: skip
            file_id = cursor.fetchone()[0]
            path_text = _path_text(stored.path)
            for chunk in stored.chunks:
                body = searchable_text(chunk.content)
                rows.append(
                    (repository_id, file_id, generation, chunk.index, chunk.start_line,
                     chunk.end_line, chunk.symbol, symbol_name(chunk.symbol), chunk.kind,
                     stored.language, stored.path,
                     stored.is_test or chunk.is_test, stored.is_doc, chunk.content,
                     content_hash(chunk.content),
                     json.dumps(list(chunk.calls)), body.count(" ") + 1 if body else 0,
                     searchable_text(chunk.symbol), path_text, body)
                )  # fmt: skip
        if rows:
            cursor.executemany(_INSERT_CHUNK, rows)
    return len(rows)


def discard_unfinished_generations(repository: Repository) -> None:
    """Remove rows of generations no branch has live (left by a crashed or cancelled run)."""
    from indexing.services.branch_generations import discard_unfinished_generations as discard

    discard(repository.pk)
