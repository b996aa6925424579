"""A tiny indexed repository for ask and MCP tests: a real bare git clone + live chunk rows.

Files are committed with dulwich, so blobs can be read at the indexed commit; each chunk knows
its exact lines, symbol and the names it calls (what tree-sitter would have stored).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from dulwich.objects import Blob

import llm
import llm.config
from indexing.clone_paths import repository_dir
from indexing.models import Repository
from indexing.services.storing import FileToStore, StoredChunk, store_files, swap_generation
from indexing.services.vectors import embed_repository, space_for
from search.retrieval.corpus_stats import refresh_search_stats
from tests.indexing.git_server import commit_files, init_bare_repo


@dataclass
class Def:
    symbol: str
    content: str
    calls: list[str] = field(default_factory=list)
    kind: str = "function"


FILES: dict[str, list[Def]] = {
    "src/pool.py": [
        Def(
            "ConnectionPool",
            "class ConnectionPool:\n    def __init__(self, size):\n        self.size = size",
            kind="class",
        ),
        Def(
            "configure_pool",
            "def configure_pool(settings):\n"
            '    """Configure the database connection pool from settings."""\n'
            "    size = read_pool_size(settings)\n    return ConnectionPool(size)",
            ["read_pool_size", "ConnectionPool"],
        ),
        Def(
            "read_pool_size",
            "def read_pool_size(settings):\n"
            "    return clamp(settings.get('pool_size', 10), 1, 100)",
            ["clamp", "get"],
        ),
    ],
    "src/util.py": [
        Def(
            "clamp",
            "def clamp(value, low, high):\n    return max(low, min(high, value))",
            ["max", "min"],
        ),
    ],
    "src/app.py": [
        Def(
            "start_app",
            "def start_app(settings):\n    pool = configure_pool(settings)\n    return serve(pool)",
            ["configure_pool", "serve"],
        ),
        Def("serve", "def serve(pool):\n    return pool", []),
    ],
    "src/retry.py": [
        Def(
            "retry_with_backoff",
            "def retry_with_backoff(fn, attempts):\n"
            "    for attempt in range(attempts):\n        sleep(compute_delay(attempt))\n"
            "    return fn()",
            ["range", "sleep", "compute_delay", "fn"],
        ),
        Def("compute_delay", "def compute_delay(attempt):\n    return 2 ** attempt", []),
    ],
    "tests/test_pool.py": [
        Def(
            "test_configure_pool",
            "def test_configure_pool():\n    assert configure_pool({}).size == 10",
            ["configure_pool"],
        ),
    ],
}


def file_text(defs: list[Def]) -> str:
    return "\n\n".join(d.content for d in defs) + "\n"


def to_store(path: str, defs: list[Def]) -> FileToStore:
    text = file_text(defs)
    chunks, line = [], 1
    for index, d in enumerate(defs):
        lines = d.content.count("\n") + 1
        chunks.append(
            StoredChunk(index, line, line + lines - 1, d.symbol, d.kind, d.content, d.calls)
        )
        line += lines + 1  # the blank line between definitions
    return FileToStore(
        path=path,
        blob_sha=Blob.from_string(text.encode()).id.decode(),
        size_bytes=len(text),
        language="python",
        is_test=path.startswith("tests/"),
        is_doc=False,
        line_count=text.count("\n"),
        chunks=chunks,
    )


def build_repository(
    name: str = "acme/shop", url: str = "https://github.com/acme/shop.git", embed: bool = True
) -> Repository:
    repository = Repository.objects.create(url=url, name=name)
    directory = repository_dir(repository.pk)
    directory.parent.mkdir(parents=True, exist_ok=True)
    repo = init_bare_repo(str(directory))
    commit = commit_files(repo, {p: file_text(d) for p, d in FILES.items()}).decode()
    store_files(repository.pk, 1, [to_store(p, d) for p, d in FILES.items()])
    repository = swap_generation(repository.pk, 1, [], commit)
    refresh_search_stats(repository.pk)
    if embed:
        embedder = llm.get_embedder()
        embed_repository(repository, space_for(embedder), embedder.embed, batch_size=32)
    return repository


@pytest.fixture
def shop(db: Any, settings: Any, tmp_path: Any) -> Iterator[Repository]:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    repository = build_repository()
    yield repository
    shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


@pytest.fixture
def chat_model(settings: Any, model_server: Any) -> Iterator[Any]:
    """The app's chat model pointed at the test model server (Ollama protocol)."""
    settings.LLM_PROVIDER = "ollama"
    settings.LLM_EMBEDDING_PROVIDER = "local"
    settings.LLM_BASE_URL = model_server.url
    settings.LLM_CHAT_MODEL = "llama3.2"
    llm.config.invalidate()
    yield model_server
    llm.config.invalidate()
