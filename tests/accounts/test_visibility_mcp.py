"""The MCP server (through the SDK's own in-process client) runs its tools as the viewer of the
session: ``search.mcp.identity.acting_as`` reaches the tools' worker threads, and unset it sees unrestricted
repositories only."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from accounts.visibility import Viewer, viewer_for
from indexing.clone_paths import repository_dir
from search.mcp.identity import acting_as, current_viewer
from search.mcp.server import build_server
from tests.accounts.visibility_corpus import SECRET, Corpus, build_corpus


@pytest.fixture
def committed_corpus(transactional_db: Any, settings: Any, tmp_path: Any) -> Iterator[Corpus]:
    """The corpus committed, so the tools' worker threads see it."""
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    built = build_corpus()
    yield built
    for repository in (built.shop, built.vault):
        shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


async def _session() -> dict[str, Any]:
    async with Client(build_server()) as client:
        listed = await client.call_tool("list_repositories", {})
        found = await client.call_tool("search_code", {"query": f'"{SECRET}"'})
        read = await client.call_tool("get_file", {"repo": "acme/vault", "path": "src/vault.py"})
    return {
        "names": sorted(r["name"] for r in listed.structured_content["repositories"]),
        "total": found.structured_content["total"],
        "read": read.structured_content
        if not read.is_error
        else json.loads(read.content[0].text[read.content[0].text.index("{") :]),
    }


def test_the_tools_run_as_the_sessions_viewer(committed_corpus: Corpus) -> None:
    as_member = viewer_for(committed_corpus.member)
    with acting_as(as_member):
        member = anyio.run(_session)
    assert member["names"] == ["acme/shop", "acme/vault"] and member["total"] == 2
    assert SECRET in member["read"]["content"]
    assert current_viewer() == Viewer()  # the block is over
    for viewer in (viewer_for(committed_corpus.outsider), None):
        if viewer is None:
            outsider = anyio.run(_session)  # nobody said: unrestricted repositories only
        else:
            with acting_as(viewer):
                outsider = anyio.run(_session)
        assert outsider["names"] == ["acme/shop"] and outsider["total"] == 0
        assert outsider["read"]["error"]["code"] == "unknown_repo"
        assert SECRET not in json.dumps(outsider)
