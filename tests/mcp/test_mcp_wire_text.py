"""The MCP wire text of an answer is its compact JSON, once: the text block an agent reads is the
structured content, not an indented second copy, and keeps to ``max_tokens``.

A module of its own: the repository is committed (``transactional_db``: the SDK runs the tool in
a worker thread, on a connection of its own), which cannot happen inside the open transaction
of test_token_budget.py's shared corpus (tests/shared_rows.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from search.mcp.budget import CHARS_PER_TOKEN, compact_json
from search.mcp.server import build_server
from tests.search.exact_corpus import FILES


def test_the_wire_text_is_the_compact_answer_once(
    transactional_db, settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from tests.search.exact_corpus import index, mirror

    settings.REPO_SEARCH_DATA_DIR = tmp_path / "data"
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    (tmp_path / "src").mkdir()
    # The stages run here: committed rows would otherwise send the job's task to the suite's
    # worker (alive after the end-to-end tests), whose run would take the job over from ours.
    monkeypatch.setattr("indexing.services.repositories.enqueue_fetch", lambda job_id: None)
    index(mirror(tmp_path / "src", FILES), "acme/httpclient")

    async def call() -> Any:
        async with Client(build_server()) as client:
            return await client.call_tool("search_code", {"query": '"return"', "max_tokens": 600})

    result = anyio.run(call)
    assert not result.is_error
    (block,) = result.content
    assert json.loads(block.text) == result.structured_content
    assert block.text == compact_json(result.structured_content)  # no indented second copy
    assert len(block.text) / CHARS_PER_TOKEN <= 600
