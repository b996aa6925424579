"""Factories for indexed data, written through the indexer's own store and swap."""

from __future__ import annotations

from collections.abc import Sequence

from indexing.models import Repository
from indexing.services.storing import FileToStore, StoredChunk, store_files, swap_generation


def indexed_repository(
    url: str,
    name: str,
    functions: Sequence[str],
    *,
    path: str = "src/app.py",
    symbol_prefix: str = "s",
    commit: str = "c" * 40,
) -> Repository:
    """A ready repository with one file whose chunks are ``functions`` (in order), named
    ``<symbol_prefix>0``, ``<symbol_prefix>1``, ... with consecutive line ranges."""
    repository = Repository.objects.create(url=url, name=name)
    chunks, line = [], 1
    for index, text in enumerate(functions):
        lines = text.count("\n") + 1
        chunks.append(
            StoredChunk(
                index=index,
                start_line=line,
                end_line=line + lines - 1,
                symbol=f"{symbol_prefix}{index}",
                kind="function",
                content=text,
            )
        )
        line += lines
    source = FileToStore(
        path, "f" * 40, sum(len(t) for t in functions), "python", False, False, line - 1, chunks
    )
    store_files(repository.pk, 1, [source])
    return swap_generation(repository.pk, 1, [], commit)
