"""Read a remote branch's tip from the ref advertisement only (what `git ls-remote` does).

No pack is requested: the client reads the refs the server advertises (protocol v0/v1:
the ``info/refs`` answer; v2: one ``ls-refs`` command) and closes the connection. The
same guarded transport as a fetch is used (`indexing.git.transport`): the URL policy is
checked again, the socket goes to the checked address, the token goes only to the
allowed hosts, and a deadline bounds the whole exchange.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from dulwich.refs import Ref

from indexing.git.errors import BranchNotFound, EmptyRepository, UnsupportedServer
from indexing.git.fetch import (
    DEFAULT_TOKEN_USERNAME,
    _branch_ref,
    _check_url,
    _make_client,
    _token_for,
)
from indexing.git.fetch_errors import classify_fetch_error
from indexing.git.transport import TransferGuard
from indexing.git.url_safety import Resolver

logger = logging.getLogger(__name__)

# A ref advertisement is small; the cap only matters for a server that streams garbage.
ADVERTISEMENT_MAX_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class RemoteTip:
    commit_sha: str  # hex sha of the branch tip on the remote
    branch: str  # the branch that was looked up (resolved from HEAD when none was named)
    seconds: float


def remote_tip(
    url: str,
    branch: str | None,
    *,
    timeout_s: float,
    allow_private_hosts: bool,
    allow_local_paths: bool = False,
    token: str | None = None,
    token_username: str = DEFAULT_TOKEN_USERNAME,
    token_hosts: Collection[str] | None = None,
    resolve: Resolver = socket.getaddrinfo,
) -> RemoteTip:
    """The current tip of ``branch`` (default: the remote HEAD) of ``url``.

    Raises ``BranchNotFound`` when the branch is gone upstream, and the fetch's other
    ``GitFetchError`` subclasses (host refused, not found, unavailable, timeout ...).
    """
    wanted = _branch_ref(branch) if branch else None
    result, seconds = _advertisement(
        url,
        wanted if wanted is not None else Ref(b"HEAD"),
        timeout_s=timeout_s,
        allow_private_hosts=allow_private_hosts,
        allow_local_paths=allow_local_paths,
        token=token,
        token_username=token_username,
        token_hosts=token_hosts,
        resolve=resolve,
    )
    refs = result.refs
    if wanted is not None:
        sha = refs.get(wanted)
        if sha is None:
            raise BranchNotFound(f"branch {branch!r} no longer exists on the remote")
        resolved = branch or ""
    else:
        sha = refs.get(Ref(b"HEAD"))
        if sha is None:
            raise EmptyRepository("the repository is empty (it has no HEAD)")
        target = result.symrefs.get(Ref(b"HEAD"), b"")
        resolved = target.removeprefix(b"refs/heads/").decode("utf-8") if target else ""
    return RemoteTip(commit_sha=sha.decode("ascii"), branch=resolved, seconds=seconds)


def remote_heads(
    url: str,
    *,
    timeout_s: float,
    allow_private_hosts: bool,
    allow_local_paths: bool = False,
    token: str | None = None,
    token_username: str = DEFAULT_TOKEN_USERNAME,
    token_hosts: Collection[str] | None = None,
    resolve: Resolver = socket.getaddrinfo,
) -> dict[str, str]:
    """Each of the remote's branches (``refs/heads/*``) and its tip, from the advertisement only
    (one request for every branch of a repository)."""
    result, _ = _advertisement(
        url,
        Ref(b"refs/heads/"),
        timeout_s=timeout_s,
        allow_private_hosts=allow_private_hosts,
        allow_local_paths=allow_local_paths,
        token=token,
        token_username=token_username,
        token_hosts=token_hosts,
        resolve=resolve,
    )
    return {
        name[len(b"refs/heads/") :].decode("utf-8", "replace"): sha.decode("ascii")
        for name, sha in result.refs.items()
        if name.startswith(b"refs/heads/") and sha
    }


def _advertisement(
    url: str,
    prefix: Ref,
    *,
    timeout_s: float,
    allow_private_hosts: bool,
    allow_local_paths: bool,
    token: str | None,
    token_username: str,
    token_hosts: Collection[str] | None,
    resolve: Resolver,
) -> tuple[Any, float]:
    """The remote's ref advertisement for refs under ``prefix`` (objects are never fetched)
    and the seconds it took; a failure raises the fetch's ``GitFetchError`` classes."""
    checked = _check_url(url, allow_private_hosts, allow_local_paths, resolve)
    with TransferGuard(
        timeout_s=timeout_s,
        max_bytes=ADVERTISEMENT_MAX_BYTES,
        allow_private_hosts=allow_private_hosts,
        resolve=resolve,
    ) as guard:
        client_token = _token_for(checked, token, token_hosts)
        client, path = _make_client(checked, guard, client_token, token_username)
        try:
            result = client.get_refs(path.encode("utf-8"), ref_prefix=[prefix])
            guard.check_deadline()
            if getattr(client, "dumb", False):
                raise UnsupportedServer(
                    "the server only speaks the dumb HTTP protocol, which is not supported"
                )
        except BaseException as exc:
            client.close()
            error = classify_fetch_error(exc, guard, checked)
            logger.warning(
                "git.remote_refs.failed url=%s error=%s transient=%s seconds=%.2f",
                checked.url,
                type(error).__name__,
                error.transient,
                guard.elapsed_s,
            )
            if error is exc:
                raise
            raise error from exc
        client.close()
        return result, guard.elapsed_s


def remote_branches(url: str, **options: Any) -> list[str]:
    """Names of the remote's branches, sorted (``remote_heads``' options)."""
    return sorted(remote_heads(url, **options))
