"""The MCP server through the SDK's own client, over stdio (``manage.py mcp``) and streamable
HTTP (``/mcp`` of the ASGI app, served by uvicorn): initialize, list tools, call each tool,
and bad arguments that come back as structured, correctable errors."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from indexing.clone_paths import repository_dir
from indexing.models import Chunk, Repository
from tests.accounts_support import bearer, make_account, token_for
from tests.asgi_server import serving_the_site
from tests.ask.corpus import FILES, build_repository
from tests.mcp.stdio import stdio_parameters

TOOLS = {
    "search_code",
    "list_repositories",
    "repository_status",
    "get_file",
    "find_symbol",
    "find_references",
    "list_files",
    "locate_issue",
    "refresh_repository",
}
WRITING_TOOLS = {"refresh_repository"}  # queues a re-index; needs the write role


@pytest.fixture
def committed_shop(transactional_db: Any, settings: Any, tmp_path: Path) -> Iterator[Repository]:
    """The tiny indexed repository, committed so other threads and processes can see it."""
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    repository = build_repository()
    yield repository
    shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def payload(result: Any) -> Any:
    """The JSON a tool returned: its structured content, or for an error the JSON after the
    SDK's "Error executing tool <name>: " prefix."""
    if result.structured_content is not None and not result.is_error:
        return result.structured_content
    text = result.content[0].text
    try:
        return json.loads(text[text.index("{") :])
    except ValueError:
        raise AssertionError(f"not JSON: {text!r}") from None


def expectations(repository: Repository) -> dict[str, Any]:
    """What the tools must report, read from the database before any async code runs."""
    chunk = Chunk.objects.get(symbol="configure_pool")
    return {
        "id": str(repository.pk),
        "commit": repository.last_indexed_commit,
        "branch": repository.branch,
        "indexed_at": repository.last_indexed_at.isoformat(),
        "start": chunk.start_line,
        "end": chunk.end_line,
    }


async def exercise(session: ClientSession, expected: dict[str, Any]) -> None:
    init = await session.initialize()
    assert init.server_info.name == "reposearch"
    assert init.server_info.version == importlib.metadata.version("reposearch")

    listed = await session.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    for tool in listed.tools:
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name not in WRITING_TOOLS), tool.name
        assert tool.description
    search_schema = next(t for t in listed.tools if t.name == "search_code").input_schema
    assert search_schema["required"] == ["query"]  # everything else has a server default

    repos = payload(await session.call_tool("list_repositories", {}))
    (entry,) = repos["repositories"]
    assert (entry["name"], entry["id"], entry["searchable"]) == (
        "acme/shop",
        expected["id"],
        True,
    )
    assert entry["commit"] == expected["commit"]

    found = payload(await session.call_tool("search_code", {"query": "configure_pool"}))
    assert 1 <= len(found["hits"]) <= 8  # the default k
    top = found["hits"][0]
    start, end, commit = expected["start"], expected["end"], expected["commit"]
    assert top["location"] == f"src/pool.py:{start}-{end}"
    assert top["symbol"] == "configure_pool" and "def configure_pool" in top["snippet"]
    # Freshness, said once per repository: the commit, its branch and when its index went live.
    assert found["commits"] == {"acme/shop": commit}
    assert found["indexed"]["acme/shop"] == {
        "branch": expected["branch"],
        "indexed_at": expected["indexed_at"],
    }
    # Within the default budget nothing was cut; `truncated` then only says more pages exist
    # (the left-out tests of this tiny repository can make the answer longer than k).
    assert found["tokens"] <= 6000 and "truncated_by" not in found
    assert found["truncated"] == (found["next_cursor"] is not None)

    status = payload(await session.call_tool("repository_status", {"repo": "acme/shop"}))
    assert (status["commit"], status["indexed_at"]) == (commit, expected["indexed_at"])
    assert status["behind"] is None  # never checked against the remote
    assert status["remote_tip"] == "" and status["job"] is None
    unknown_status = await session.call_tool("repository_status", {"repo": "acme/nope"})
    assert unknown_status.is_error and "'acme/shop'" in payload(unknown_status)["error"]["valid"]

    expanded = payload(
        await session.call_tool(
            "search_code", {"query": "start_app", "k": 1, "expand": True, "repo": "acme/shop"}
        )
    )
    assert expanded["hits"][0]["symbol"] == "start_app"
    assert ("configure_pool", "callee") in {
        (h["symbol"], h.get("origin", "search")) for h in expanded["hits"]
    }

    read = payload(
        await session.call_tool(
            "get_file",
            {
                "repo": "acme/shop",
                "path": "src/pool.py",
                "start_line": start,
                "end_line": end,
            },
        )
    )
    lines = FILES["src/pool.py"].text.splitlines()
    assert read["content"] == "\n".join(lines[start - 1 : end])
    assert read["commit"] == commit and read["truncated"] is False

    # Bad arguments: errors the agent can read and act on.
    bad_k = await session.call_tool("search_code", {"query": "pool", "k": 0})
    assert bad_k.is_error
    error = payload(bad_k)["error"]
    assert error["code"] == "invalid_k" and "1..30" in error["valid"]

    unknown = await session.call_tool("get_file", {"repo": "acme/nope", "path": "x.py"})
    assert unknown.is_error and "'acme/shop'" in payload(unknown)["error"]["valid"]

    no_path = await session.call_tool("get_file", {"repo": "acme/shop", "path": "src/missing.py"})
    assert payload(no_path)["error"]["code"] == "unknown_path"

    out_of_range = await session.call_tool(
        "get_file", {"repo": expected["id"], "path": "src/pool.py", "start_line": 500}
    )
    assert payload(out_of_range)["error"]["code"] == "invalid_range"

    wrong_type = await session.call_tool("search_code", {"query": "pool", "k": "many"})
    assert wrong_type.is_error and "k" in wrong_type.content[0].text

    missing = await session.call_tool("get_file", {"repo": "acme/shop"})
    assert missing.is_error and "path" in missing.content[0].text

    # Navigation: definitions, references and the file list, through the same transport.
    defined = payload(await session.call_tool("find_symbol", {"name": "configure_pool"}))
    assert defined["definitions"][0]["location"] == f"src/pool.py:{start}-{end}"
    used = payload(await session.call_tool("find_references", {"name": "configure_pool"}))
    assert used["truncated"] is False and all("configure_pool" in r for r in used["references"])
    files = payload(await session.call_tool("list_files", {"repo": "acme/shop", "glob": "*.py"}))
    assert "src/pool.py" in files["files"] and files["commit"] == commit


def test_stdio_transport(committed_shop: Repository, settings: Any) -> None:
    make_account("read", username="agent")
    params = stdio_parameters("agent", settings)

    expected = expectations(committed_shop)

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await exercise(session, expected)

    anyio.run(main)


@pytest.fixture
def web_server(committed_shop: Repository, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The whole ASGI app (Django + /mcp) under uvicorn in a thread, on a free local port."""
    with serving_the_site(monkeypatch) as base:
        yield base


def test_streamable_http_transport_mounted_in_the_web_server(
    web_server: str, committed_shop
) -> None:
    import httpx

    # The rest of the site is still served by Django from the same app.
    assert httpx.get(f"{web_server}/api/health", timeout=10).status_code in (200, 503)

    expected = expectations(committed_shop)
    headers = bearer(token_for(make_account("read")))

    async def main() -> None:
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(f"{web_server}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await exercise(session, expected)

    anyio.run(main)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "tests", "version": "0"},
    },
}


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer rs_unknownunknownunknownunknown", "Basic YTpi", "Bearer " + "x" * 10_000,
     "Bearer t\u00f6ken-with-umlaut-and-more"],
    ids=["none", "empty", "no token", "unknown", "basic", "10 kB", "non-ASCII"],
)  # fmt: skip
def test_http_mcp_needs_a_usable_token(web_server: str, authorization: str | None) -> None:
    import httpx

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization.encode()  # type: ignore[assignment]  # bytes: httpx sends them as they are
    response = httpx.post(f"{web_server}/mcp", headers=headers, json=INITIALIZE, timeout=10)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert set(response.json()) == {"error"}


@pytest.mark.parametrize("kind", ["expired", "revoked", "deleted user", "inactive user"])
def test_http_mcp_refuses_tokens_that_no_longer_hold(web_server: str, kind: str) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from accounts.models import ApiToken

    user = make_account("admin")
    secret = token_for(user)
    if kind == "expired":
        ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    elif kind == "revoked":
        ApiToken.objects.update(revoked_at=timezone.now())
    elif kind == "deleted user":
        user.delete()
    else:
        user.is_active = False
        user.save()
    import httpx

    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               **bearer(secret)}  # fmt: skip
    response = httpx.post(f"{web_server}/mcp", headers=headers, json=INITIALIZE, timeout=10)
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "unknown, expired or revoked API token"


def test_a_foreign_host_header_is_refused(web_server: str) -> None:
    import httpx

    response = httpx.post(
        f"{web_server}/mcp",
        headers={
            "Host": "evil.example",
            "Content-Type": "application/json",
            **bearer(token_for(make_account("read"))),
        },
        content=b"{}",
        timeout=10,
    )
    assert response.status_code == 421
