"""The one factory for indexed data, written through the indexer's own store and swap.

``indexed_repository`` makes a ready repository from files (``SourceDoc``, each a list of
``Piece`` chunks laid out one after another) or, for short, from the source of a few functions
(one file). Options give what a test needs beyond rows: corpus statistics (on by default, as
indexing refreshes them after the swap), a real bare git clone holding the files at the indexed
commit (``clone=True``: file views, ``get_file``), and vectors of the local model
(``embed=True``). ``index_generation`` stores (and swaps in) a further generation.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from dulwich.objects import Blob

from indexing.models import Repository
from indexing.services.branch_generations import swap_branch_generation
from indexing.services.storing import FileToStore, StoredChunk, store_files


@dataclass
class Piece:
    """One chunk: what a test cares about."""

    content: str
    symbol: str = ""
    kind: str = "function"
    calls: list[str] = field(default_factory=list)  # names it calls (what tree-sitter stores)


@dataclass
class SourceDoc:
    """One file; ``gap`` blank lines separate its pieces."""

    path: str
    pieces: Sequence[Piece]
    language: str = "python"
    is_test: bool = False
    is_doc: bool = False
    gap: int = 0

    @property
    def text(self) -> str:
        """The file as committed: the pieces at exactly the lines their chunks say."""
        separator = "\n" * (self.gap + 1)
        return separator.join(piece.content.rstrip("\n") for piece in self.pieces) + "\n"


def functions_file(
    functions: Sequence[str], *, path: str = "src/app.py", symbol_prefix: str = "s"
) -> SourceDoc:
    """One file whose chunks are ``functions`` (in order), named ``<symbol_prefix>0``, ..."""
    pieces = [Piece(text, f"{symbol_prefix}{index}") for index, text in enumerate(functions)]
    return SourceDoc(path, pieces)


def to_store(doc: SourceDoc) -> FileToStore:
    """What the indexer would store for ``doc`` (its blob id is git's, so a clone can hold it)."""
    chunks, line = [], 1
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
                calls=list(piece.calls),
            )
        )
        line += lines + doc.gap
    text = doc.text
    return FileToStore(
        path=doc.path,
        blob_sha=Blob.from_string(text.encode()).id.decode(),
        size_bytes=len(text.encode()),
        language=doc.language,
        is_test=doc.is_test,
        is_doc=doc.is_doc,
        line_count=text.count("\n"),
        chunks=chunks,
    )


def stored_functions(path: str, count: int, name: str = "fresh_") -> FileToStore:
    """A file of ``count`` one-line functions ``<name>0`` ..., as the indexer would store it."""
    functions = [f"def {name}{i}(): pass" for i in range(count)]
    return to_store(functions_file(functions, path=path, symbol_prefix=name))


def index_generation(
    repository: Repository,
    docs: Sequence[SourceDoc],
    *,
    swap: bool = True,
    stats: bool = True,
    commit: str | None = None,
) -> Repository:
    """Store ``docs`` as the next generation; swap it in (and refresh statistics) unless told."""
    from indexing.services.search_stats import refresh_search_stats

    repository.refresh_from_db()
    generation = repository.active_generation + 1
    store_files(repository.pk, generation, [to_store(d) for d in docs])
    if swap:
        swapped = swap_branch_generation(
            repository.pk, None, generation, [], commit or f"commit{generation}"
        )
        assert isinstance(swapped, Repository)
        repository = swapped
        if stats:
            refresh_search_stats(repository.pk)
    return repository


def _commit_clone(repository: Repository, docs: Sequence[SourceDoc]) -> str:
    """A bare git repository in the repository's clone directory holding ``docs``; its commit."""
    from indexing.clone_paths import repository_dir
    from tests.indexing.git_server import commit_files, init_bare_repo

    directory = repository_dir(repository.pk)
    directory.parent.mkdir(parents=True, exist_ok=True)
    repo = init_bare_repo(str(directory))
    return commit_files(repo, {doc.path: doc.text for doc in docs}).decode()


def indexed_repository(
    name: str,
    files: Sequence[SourceDoc] | Sequence[str],
    *,
    url: str | None = None,
    path: str = "src/app.py",
    symbol_prefix: str = "s",
    commit: str | None = None,
    stats: bool = True,
    clone: bool = False,
    embed: bool = False,
) -> Repository:
    """A ready repository named ``name`` holding ``files`` (or, given strings, one file at
    ``path`` whose chunks are those functions; see ``functions_file``)."""
    docs: list[SourceDoc]
    if files and all(isinstance(item, str) for item in files):
        docs = [functions_file([str(f) for f in files], path=path, symbol_prefix=symbol_prefix)]
    else:
        docs = [doc for doc in files if isinstance(doc, SourceDoc)]
        if len(docs) != len(files):
            raise TypeError("files: SourceDoc objects, or the source of functions (strings)")
    url = url or f"https://example.com/{name}-{uuid.uuid4().hex[:6]}.git"
    repository = Repository.objects.create(url=url, name=name)
    if clone:
        commit = _commit_clone(repository, docs)
    repository = index_generation(repository, docs, stats=stats, commit=commit)
    if embed:
        import llm
        from indexing.services.vectors import embed_repository, space_for

        embedder = llm.get_embedder()
        embed_repository(repository, space_for(embedder), embedder.embed, batch_size=32)
    return repository
