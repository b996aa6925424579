"""MCP ``refresh_repository``: a write token queues a re-index (coalesced while one runs) and it
is audited with ``via: mcp``; a read-only caller gets a tool error naming the role it needs and
queues nothing -- over streamable HTTP with tokens, over stdio with ``--user``, in process."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from accounts.models import ApiToken, AuditEntry
from accounts.roles import Role
from accounts.visibility import viewer_for
from indexing.models import IndexedBranch, IndexJob, Repository
from search.mcp.identity import Caller, acting_as
from search.mcp.refresh import refresh_repository
from search.mcp.tools import ToolInputError, repository_status
from tests.accounts_support import bearer, make_account, token_for
from tests.ask.corpus import shop  # noqa: F401 - fixture
from tests.mcp.stdio import stdio_session
from tests.mcp.test_mcp_transports import committed_shop, payload, web_server  # noqa: F401


def _jobs(repository: Repository) -> int:
    return IndexJob.objects.filter(repository=repository).count()


def test_in_process_the_role_decides_and_a_hidden_repository_is_unknown(
    shop: Repository,  # noqa: F811
) -> None:
    reader, writer = make_account("read"), make_account("write")
    before = _jobs(shop)
    with (
        acting_as(viewer_for(reader), Caller(Role.READ, reader)),
        pytest.raises(ToolInputError) as refused,
    ):
        refresh_repository("acme/shop", viewer=viewer_for(reader))
    error = refused.value.payload["error"]
    assert error["code"] == "permission_denied" and "needs the write role" in error["message"]
    assert "role is read" in error["message"]
    assert _jobs(shop) == before
    denied = AuditEntry.objects.get(action="repository.reindex", actor=reader.username)
    assert (denied.outcome, denied.details["via"]) == ("refused", "mcp")

    with pytest.raises(ToolInputError, match="permission_denied"):
        refresh_repository("acme/shop")  # nobody said who: no role

    # An administrator's read token: the scope is what falls short, and the message says so.
    admin = make_account("admin")
    token_for(admin, "read", name="read only")
    read_token = ApiToken.objects.get(user=admin, name="read only")
    with (
        acting_as(viewer_for(admin), Caller(Role.READ, admin, read_token)),
        pytest.raises(ToolInputError) as refused,
    ):
        refresh_repository("acme/shop", viewer=viewer_for(admin))
    message = refused.value.payload["error"]["message"]
    assert "this token's scope is read (its account holds admin)" in message
    assert _jobs(shop) == before

    with acting_as(viewer_for(writer), Caller(Role.WRITE, writer)):
        first = refresh_repository("acme/shop", viewer=viewer_for(writer))
        again = refresh_repository(str(shop.pk), viewer=viewer_for(writer))
    assert first["coalesced"] is False and first["job"]["state"] == "queued"
    assert again["coalesced"] is True and again["job"]["id"] == first["job"]["id"]
    assert _jobs(shop) == before + 1
    rows = AuditEntry.objects.filter(action="repository.reindex", actor=writer.username)
    assert [(r.outcome, r.target, r.details["coalesced"]) for r in rows.order_by("id")] == [
        ("ok", str(shop.pk), False), ("ok", str(shop.pk), True)
    ]  # fmt: skip

    from django.contrib.auth.models import Group

    shop.visible_to_groups.add(Group.objects.create(name="shop-team"))
    outsider = make_account("write")
    with (
        acting_as(viewer_for(outsider), Caller(Role.WRITE, outsider)),
        pytest.raises(ToolInputError, match="unknown_repo"),
    ):
        refresh_repository("acme/shop", viewer=viewer_for(outsider))


def test_another_indexed_branch_is_refreshed_by_name_and_listed_with_its_freshness(
    shop: Repository,  # noqa: F811
) -> None:
    release = IndexedBranch.objects.create(
        repository=shop, name="release/1.0", generation=7, last_indexed_commit="c" * 40
    )
    writer = make_account("write")
    with acting_as(viewer_for(writer), Caller(Role.WRITE, writer)):
        status = repository_status("acme/shop", viewer=viewer_for(writer))
        assert [(b["name"], b["commit"]) for b in status["branches"]] == [("release/1.0", "c" * 40)]
        with pytest.raises(ToolInputError) as unknown:
            refresh_repository("acme/shop", branch="nope", viewer=viewer_for(writer))
        error = unknown.value.payload["error"]
        assert error["code"] == "unknown_branch" and "'nope'" in error["message"]
        assert "'release/1.0'" in error["valid"]
        queued = refresh_repository("acme/shop", branch="release/1.0", viewer=viewer_for(writer))
        # the default branch by its name is the default re-index, joined with nothing else
        default = refresh_repository(
            "acme/shop", branch=shop.branch or None, viewer=viewer_for(writer)
        )
    assert queued["branch"] == "release/1.0" and queued["job"]["kind"] == "incremental"
    assert IndexJob.objects.get(pk=queued["job"]["id"]).branch_id == release.pk
    assert queued["pending"] is False
    # a job of the branch runs: the default branch's re-index is queued after it
    assert default["job"]["id"] == queued["job"]["id"] and default["pending"] is True
    assert Repository.objects.get(pk=shop.pk).reindex_pending
    entry = AuditEntry.objects.filter(action="repository.reindex").order_by("id")[0]
    assert entry.details["branch"] == "release/1.0"


def test_over_http_a_write_token_refreshes_and_a_read_token_is_refused(
    web_server: str,  # noqa: F811
    committed_shop: Repository,  # noqa: F811
) -> None:
    writer = make_account("write")
    read_scoped = bearer(token_for(writer, scope="read", name="read-only"))
    write_scoped = bearer(token_for(writer, scope="write", name="agent"))

    async def call(headers: dict[str, str]) -> Any:
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(f"{web_server}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("refresh_repository", {"repo": "acme/shop"})
            return result.is_error, payload(result)

    before = _jobs(committed_shop)
    is_error, refused = anyio.run(call, read_scoped)
    assert is_error and refused["error"]["code"] == "permission_denied"
    assert "write role" in refused["error"]["message"]
    assert _jobs(committed_shop) == before

    is_error, queued = anyio.run(call, write_scoped)
    assert not is_error and queued["id"] == str(committed_shop.pk)
    job = IndexJob.objects.get(pk=queued["job"]["id"])
    assert job.repository_id == committed_shop.pk and job.kind == "incremental"
    row = AuditEntry.objects.filter(action="repository.reindex", outcome="ok").get()
    assert (row.actor, row.token_name, row.details["via"]) == (writer.username, "agent", "mcp")
    assert row.address == "127.0.0.1"
    refused_row = AuditEntry.objects.filter(action="repository.reindex", outcome="refused").get()
    assert refused_row.token_name == "read-only"


def test_over_stdio_the_user_s_role_decides(committed_shop: Repository, settings: Any) -> None:  # noqa: F811
    make_account("read", username="reader")
    make_account("write", username="writer")

    async def call(user: str) -> Any:
        async with stdio_session(user, settings) as session:
            result = await session.call_tool("refresh_repository", {"repo": "acme/shop"})
            return result.is_error, payload(result)

    is_error, refused = anyio.run(call, "reader")
    assert is_error and refused["error"]["code"] == "permission_denied"
    is_error, queued = anyio.run(call, "writer")
    assert not is_error and queued["job"]["state"] == "queued"
    row = AuditEntry.objects.filter(action="repository.reindex", outcome="ok").get()
    assert (row.actor, row.token_name, row.details["via"]) == ("writer", "", "mcp")
