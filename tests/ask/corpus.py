"""A tiny indexed repository for ask and MCP tests: a real bare git clone + live chunk rows
(``tests.factories.indexed_repository`` with ``clone=True``).

Files are committed with dulwich, so blobs can be read at the indexed commit; each chunk knows
its exact lines, symbol and the names it calls (what tree-sitter would have stored).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

import llm
import llm.config
from indexing.clone_paths import repository_dir
from indexing.models import Repository
from tests.factories import Piece, SourceDoc, indexed_repository

FILES: dict[str, SourceDoc] = {
    "src/pool.py": SourceDoc(
        "src/pool.py",
        [
            Piece(
                "class ConnectionPool:\n    def __init__(self, size):\n        self.size = size",
                "ConnectionPool",
                kind="class",
                calls=[],
            ),
            Piece(
                'def configure_pool(settings):\n    """Configure the database connection pool from settings."""\n    size = read_pool_size(settings)\n    return ConnectionPool(size)',
                "configure_pool",
                calls=["read_pool_size", "ConnectionPool"],
            ),
            Piece(
                "def read_pool_size(settings):\n    return clamp(settings.get('pool_size', 10), 1, 100)",
                "read_pool_size",
                calls=["clamp", "get"],
            ),
        ],
        is_test=False,
        gap=1,
    ),
    "src/util.py": SourceDoc(
        "src/util.py",
        [
            Piece(
                "def clamp(value, low, high):\n    return max(low, min(high, value))",
                "clamp",
                calls=["max", "min"],
            ),
        ],
        is_test=False,
        gap=1,
    ),
    "src/app.py": SourceDoc(
        "src/app.py",
        [
            Piece(
                "def start_app(settings):\n    pool = configure_pool(settings)\n    return serve(pool)",
                "start_app",
                calls=["configure_pool", "serve"],
            ),
            Piece("def serve(pool):\n    return pool", "serve", calls=[]),
        ],
        is_test=False,
        gap=1,
    ),
    "src/retry.py": SourceDoc(
        "src/retry.py",
        [
            Piece(
                "def retry_with_backoff(fn, attempts):\n    for attempt in range(attempts):\n        sleep(compute_delay(attempt))\n    return fn()",
                "retry_with_backoff",
                calls=["range", "sleep", "compute_delay", "fn"],
            ),
            Piece(
                "def compute_delay(attempt):\n    return 2 ** attempt", "compute_delay", calls=[]
            ),
        ],
        is_test=False,
        gap=1,
    ),
    "tests/test_pool.py": SourceDoc(
        "tests/test_pool.py",
        [
            Piece(
                "def test_configure_pool():\n    assert configure_pool({}).size == 10",
                "test_configure_pool",
                calls=["configure_pool"],
            ),
        ],
        is_test=True,
        gap=1,
    ),
}


def build_repository(
    name: str = "acme/shop", url: str = "https://github.com/acme/shop.git", embed: bool = True
) -> Repository:
    return indexed_repository(name, list(FILES.values()), url=url, clone=True, embed=embed)


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
