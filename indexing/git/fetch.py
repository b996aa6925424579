"""Fetch one branch of a remote repository into a bare repository, with limits.

Not `porcelain.clone`: that fetches the tip of every branch and tag. Here the client
asks for exactly one commit (the remote HEAD or a named branch) at depth 1, and the
pack streams straight into the object store of a bare repository. Nothing is checked
out, so hooks never run, and submodules (gitlinks) are never fetched.

Limits are enforced while the pack arrives (`indexing.git.transport.TransferGuard`):
the byte cap aborts as soon as the received pack passes it, and the deadline aborts a
slow or silent server. A failed first fetch removes the repository directory; a failed
update leaves the previous commit intact and removes the partial pack.

The token is handed to dulwich's HTTP client in memory only (HTTP basic auth, scoped
by dulwich to the URL's origin, so a redirect to another host never carries it). No
remote is configured in the repository, so the URL and the token are never written to
disk. Neither the user's nor the system's git configuration is read.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from dulwich.client import FetchPackResult, GitClient, HttpGitClient, LocalGitClient
from dulwich.config import StackedConfig
from dulwich.errors import NotGitRepository
from dulwich.objects import Commit, ObjectID
from dulwich.refs import Ref, check_ref_format
from dulwich.repo import Repo

from indexing.git.disk_space import causes, no_space_left
from indexing.git.errors import (
    BranchNotFound,
    EmptyRepository,
    GitFetchError,
    HostNotFound,
    HostRefused,
    UnsupportedServer,
)
from indexing.git.fetch_errors import classify_fetch_error
from indexing.git.hostile import check_fetched_tip, corrupt_object
from indexing.git.transport import GuardedTCPGitClient, TransferGuard, make_pool_manager
from indexing.git.url_safety import (
    CheckedUrl,
    Resolver,
    UnsafeRepositoryUrl,
    check_repository_url,
)
from reposearch.data_folder import private_folder

logger = logging.getLogger(__name__)

DEFAULT_TOKEN_USERNAME = "x-access-token"  # noqa: S105 - GitHub; GitLab/Gitea accept any user name


@dataclass(frozen=True)
class FetchResult:
    commit_sha: str  # hex sha of the fetched branch tip
    branch: str  # resolved branch name, e.g. "main"
    url: str  # normalized URL without credentials
    bytes_received: int  # pack bytes received (0 when already up to date)
    seconds: float
    previous_commit_sha: str | None = None  # for fetch_update: the tip before the fetch

    @property
    def changed(self) -> bool:
        return self.commit_sha != self.previous_commit_sha


def fetch_branch(
    url: str,
    repo_dir: str | os.PathLike[str],
    *,
    branch: str | None = None,
    max_bytes: int,
    timeout_s: float,
    allow_private_hosts: bool,
    allow_local_paths: bool = False,
    token: str | None = None,
    token_username: str = DEFAULT_TOKEN_USERNAME,
    token_hosts: Collection[str] | None = None,
    depth: int | None = 1,
    resolve: Resolver = socket.getaddrinfo,
) -> FetchResult:
    """Fetch `branch` (default: the remote HEAD) of `url` into a new bare repo at `repo_dir`.

    `repo_dir` must not exist or be empty; on any failure it is removed. `token` is sent
    only to hosts in `token_hosts` when given (recommended: the operator's git host),
    otherwise to the URL's host. Raises `GitFetchError` subclasses.
    """
    repo_dir = os.fspath(repo_dir)
    checked = _check_url(url, allow_private_hosts, allow_local_paths, resolve)
    if os.path.exists(repo_dir) and os.listdir(repo_dir):
        raise GitFetchError(f"target directory is not empty: {repo_dir}")
    private_folder(repo_dir)
    try:
        repo = Repo.init_bare(repo_dir, config=StackedConfig([]), default_branch=b"main")
        with repo:
            return _fetch_into(
                repo,
                checked,
                branch=branch,
                previous=None,
                max_bytes=max_bytes,
                timeout_s=timeout_s,
                allow_private_hosts=allow_private_hosts,
                token=_token_for(checked, token, token_hosts),
                token_username=token_username,
                depth=depth,
                resolve=resolve,
            )
    except BaseException as exc:
        shutil.rmtree(repo_dir, ignore_errors=True)
        full = no_space_left(causes(exc)) if not isinstance(exc, GitFetchError) else None
        if full is not None:
            raise full from exc
        raise


def fetch_update(
    repo_dir: str | os.PathLike[str],
    url: str,
    branch: str,
    *,
    max_bytes: int,
    timeout_s: float,
    allow_private_hosts: bool,
    allow_local_paths: bool = False,
    token: str | None = None,
    token_username: str = DEFAULT_TOKEN_USERNAME,
    token_hosts: Collection[str] | None = None,
    depth: int | None = 1,
    resolve: Resolver = socket.getaddrinfo,
) -> FetchResult:
    """Fetch the current tip of `branch` into an existing repository from `fetch_branch`.

    Objects of the previous tip stay in the store, so both trees can be diffed. On
    failure the repository is left as it was.
    """
    repo_dir = os.fspath(repo_dir)
    checked = _check_url(url, allow_private_hosts, allow_local_paths, resolve)
    try:
        repo = Repo(repo_dir)
    except NotGitRepository:
        raise GitFetchError(f"no repository at {repo_dir}; fetch it with fetch_branch") from None
    with repo:
        previous = repo.refs.as_dict().get(Ref(b"refs/heads/" + branch.encode("utf-8")))
        return _fetch_into(
            repo,
            checked,
            branch=branch,
            previous=previous.decode("ascii") if previous else None,
            max_bytes=max_bytes,
            timeout_s=timeout_s,
            allow_private_hosts=allow_private_hosts,
            token=_token_for(checked, token, token_hosts),
            token_username=token_username,
            depth=depth,
            resolve=resolve,
        )


def _check_url(
    url: str, allow_private_hosts: bool, allow_local_paths: bool, resolve: Resolver
) -> CheckedUrl:
    # Re-run right before the fetch: the answer may differ from when the URL was added.
    try:
        return check_repository_url(
            url,
            allow_private_hosts=allow_private_hosts,
            allow_local_paths=allow_local_paths,
            resolve=resolve,
        )
    except UnsafeRepositoryUrl as exc:
        if exc.message.startswith(("host not found", "DNS lookup")):
            raise HostNotFound(exc.message, transient=exc.transient) from None
        raise HostRefused(exc.message) from None


def _token_for(
    checked: CheckedUrl, token: str | None, token_hosts: Collection[str] | None
) -> str | None:
    if not token or checked.scheme not in ("http", "https"):
        return None
    if token_hosts is not None and checked.host not in {h.lower() for h in token_hosts}:
        return None
    return token


def _make_client(
    checked: CheckedUrl,
    guard: TransferGuard,
    token: str | None,
    token_username: str,
) -> tuple[GitClient, str]:
    parsed = urlparse(checked.url)
    if checked.scheme in ("http", "https"):
        client = HttpGitClient.from_parsedurl(
            parsed,
            config=None,
            username=token_username if token else None,
            password=token,
            pool_manager=make_pool_manager(guard),
        )
        return client, parsed.path
    if checked.scheme == "git":
        return GuardedTCPGitClient(checked.host or "", checked.port, guard), parsed.path
    assert checked.local_path is not None
    return LocalGitClient(), checked.local_path


def _branch_ref(branch: str) -> Ref:
    ref = Ref(b"refs/heads/" + branch.encode("utf-8"))
    if not check_ref_format(ref):
        raise BranchNotFound(f"branch name {branch!r} is not valid")
    return ref


def _fetch_into(
    repo: Repo,
    checked: CheckedUrl,
    *,
    branch: str | None,
    previous: str | None,
    max_bytes: int,
    timeout_s: float,
    allow_private_hosts: bool,
    token: str | None,
    token_username: str,
    depth: int | None,
    resolve: Resolver,
) -> FetchResult:
    wanted_ref = _branch_ref(branch) if branch else None
    chosen: dict[str, bytes] = {}

    with TransferGuard(
        timeout_s=timeout_s,
        max_bytes=max_bytes,
        allow_private_hosts=allow_private_hosts,
        resolve=resolve,
    ) as guard:
        client, path = _make_client(checked, guard, token, token_username)

        def determine_wants(refs: Mapping[bytes, bytes], depth: int | None = None) -> list[bytes]:
            guard.check_deadline()  # a reply cut short by the watchdog must not be judged
            if getattr(client, "dumb", False):
                raise UnsupportedServer(
                    "the server only speaks the dumb HTTP protocol, which is not supported"
                )
            if wanted_ref is not None:
                sha = refs.get(wanted_ref)
                if sha is None:
                    raise BranchNotFound(f"branch {branch!r} not found")
            else:
                sha = refs.get(b"HEAD")
                if sha is None:
                    raise EmptyRepository("the repository is empty (it has no HEAD)")
            chosen["sha"] = sha
            return [] if ObjectID(sha) in repo.object_store else [sha]

        pack_file, commit_pack, abort_pack = repo.object_store.add_pack()

        def receive_pack_data(data: bytes) -> None:
            guard.count(len(data))
            pack_file.write(data)

        def receive_progress(_message: bytes) -> None:
            guard.check_deadline()

        ref_prefix = [wanted_ref] if wanted_ref else [b"HEAD", b"refs/heads/"]
        heads = [ObjectID(previous.encode("ascii"))] if previous else []
        graph_walker = repo.get_graph_walker(heads=heads)
        try:
            result = client.fetch_pack(
                path,
                determine_wants,  # type: ignore[arg-type]
                graph_walker,
                receive_pack_data,  # type: ignore[arg-type]
                progress=receive_progress,
                depth=depth,
                ref_prefix=ref_prefix,
            )
            if result.object_format not in (None, "sha1"):
                raise UnsupportedServer("sha256 repositories are not supported")
        except BaseException as exc:
            abort_pack()
            client.close()
            error = classify_fetch_error(exc, guard, checked)
            logger.warning(
                "git.fetch.failed url=%s error=%s transient=%s bytes=%d seconds=%.2f",
                checked.url,
                type(error).__name__,
                error.transient,
                guard.received_bytes,
                guard.elapsed_s,
            )
            if error is exc:
                raise
            raise error from exc
        client.close()
        try:
            commit_pack()
        except Exception as exc:
            with contextlib.suppress(Exception):
                abort_pack()
            raise (
                no_space_left(causes(exc))
                or corrupt_object([exc])
                or GitFetchError("the server sent a corrupt pack; try again later", transient=True)
            ) from exc

    sha = ObjectID(chosen["sha"])
    resolved_branch = branch or _default_branch_name(result, sha)
    check_fetched_tip(repo, sha)
    obj = repo[sha]
    if not isinstance(obj, Commit):
        raise GitFetchError(f"branch {resolved_branch!r} does not point to a commit")
    repo.update_shallow(result.new_shallow, result.new_unshallow)
    local_ref = Ref(b"refs/heads/" + resolved_branch.encode("utf-8"))
    repo.refs[local_ref] = sha
    repo.refs.set_symbolic_ref(Ref(b"HEAD"), local_ref)

    fetched = FetchResult(
        commit_sha=sha.decode("ascii"),
        branch=resolved_branch,
        url=checked.url,
        bytes_received=guard.received_bytes,
        seconds=guard.elapsed_s,
        previous_commit_sha=previous,
    )
    logger.info(
        "git.fetch.done url=%s branch=%s commit=%s bytes=%d seconds=%.2f",
        checked.url,
        fetched.branch,
        fetched.commit_sha,
        fetched.bytes_received,
        fetched.seconds,
    )
    return fetched


def _default_branch_name(result: FetchPackResult, sha: bytes) -> str:
    target = result.symrefs.get(b"HEAD")  # type: ignore[call-overload]
    if target and target.startswith(b"refs/heads/"):
        return target[len(b"refs/heads/") :].decode("utf-8")
    # No symref advertised: pick the branch that HEAD points at by sha.
    refs: dict[Any, Any] = result.refs
    candidates = sorted(
        name[len(b"refs/heads/") :].decode("utf-8")
        for name, value in refs.items()
        if name.startswith(b"refs/heads/") and value == sha
    )
    for preferred in ("main", "master"):
        if preferred in candidates:
            return preferred
    return candidates[0] if candidates else "main"
