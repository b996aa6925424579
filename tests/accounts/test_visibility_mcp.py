"""The MCP server runs its tools as the viewer of the session -- in process (the SDK's own
client), over streamable HTTP with an account's token and over stdio with ``--user``: ``search.mcp.identity.acting_as`` reaches the tools' worker threads, and unset it sees unrestricted
repositories only."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from accounts.visibility import Viewer, viewer_for
from indexing.clone_paths import repository_dir
from search.mcp.identity import acting_as, current_viewer
from search.mcp.server import build_server
from tests.accounts.visibility_corpus import SECRET, Corpus, build_corpus
from tests.accounts_support import bearer, token_for
from tests.asgi_server import serving_the_site
from tests.mcp.stdio import stdio_session


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


@pytest.fixture
def web_server(committed_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The whole ASGI app (Django + /mcp) under uvicorn in a thread, on a free local port."""
    with serving_the_site(monkeypatch) as base:
        yield base


def test_mcp_over_http_sees_what_the_tokens_account_sees(
    web_server: str, committed_corpus: Corpus
) -> None:
    import httpx2

    async def names_for(headers: dict[str, str]) -> list[str]:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(f"{web_server}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.call_tool("list_repositories", {})
            found = await session.call_tool("search_code", {"query": f'"{SECRET}"'})
        assert not found.is_error
        names = [r["name"] for r in listed.structured_content["repositories"]]
        return [*names, f"total={found.structured_content['total']}"]

    member = anyio.run(names_for, bearer(token_for(committed_corpus.member)))
    assert member == ["acme/shop", "acme/vault", "total=2"]
    outsider = anyio.run(names_for, bearer(token_for(committed_corpus.outsider)))
    assert outsider == ["acme/shop", "total=0"]


def test_mcp_over_stdio_sees_what_the_user_option_names(
    committed_corpus: Corpus, settings: Any
) -> None:
    async def read_vault(username: str) -> Any:
        async with stdio_session(username, settings) as session:
            return await session.call_tool(
                "get_file", {"repo": "acme/vault", "path": "src/vault.py"}
            )

    assert (
        SECRET
        in anyio.run(read_vault, committed_corpus.member.username).structured_content["content"]
    )
    refused = anyio.run(read_vault, committed_corpus.outsider.username)
    assert refused.is_error and SECRET not in refused.content[0].text
    assert "unknown_repo" in refused.content[0].text
