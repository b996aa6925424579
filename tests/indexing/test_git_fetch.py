"""Fetching one branch over smart HTTP / git:// from in-process dulwich servers.

No database needed: run with `pytest -p no:django tests/indexing/test_git_fetch.py`.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
from dulwich.config import StackedConfig
from dulwich.repo import Repo
from dulwich.server import DictBackend, TCPGitServer

from indexing.git.errors import (
    AuthenticationFailed,
    BranchNotFound,
    FetchTimeout,
    GitFetchError,
    HostRefused,
    RepositoryNotFound,
    RepositoryTooLarge,
    ServerUnavailable,
)
from indexing.git.fetch import fetch_branch, fetch_update
from indexing.git.tree import GitTreeReader
from tests.indexing.git_server import (
    GitHttpServer,
    SilentServer,
    commit_files,
    init_bare_repo,
)

TOKEN = "ghp_S3cretTokenValue0123456789"
MB = 1024 * 1024


def fetch(url: str, target: Path, **kwargs):
    options = {"max_bytes": 50 * MB, "timeout_s": 30.0, "allow_private_hosts": True}
    options.update(kwargs)
    return fetch_branch(url, target, **options)


@pytest.fixture
def source(tmp_path: Path):
    repo = init_bare_repo(str(tmp_path / "source.git"))
    commit_files(repo, {"README.md": "# old\n"}, message="first")
    main = commit_files(
        repo,
        {"README.md": "# demo\n", "src/app.py": "def main():\n    return 1\n"},
        parent=repo.refs[b"refs/heads/main"],
        message="second",
    )
    commit_files(repo, {"dev.txt": "dev branch\n"}, branch="dev", parent=main)
    yield repo
    repo.close()


@pytest.fixture
def server(source: Repo):
    with GitHttpServer({"org/repo.git": source}) as running:
        yield running


def files_under(path: Path) -> list[Path]:
    return [Path(root) / name for root, _dirs, names in os.walk(path) for name in names]


def test_fetch_default_branch_is_shallow_and_single_branch(server, source, tmp_path):
    target = tmp_path / "repos" / "r1"
    result = fetch(server.url("org/repo.git"), target)

    assert result.commit_sha == source.refs[b"refs/heads/main"].decode()
    assert result.branch == "main"
    assert result.url == server.url("org/repo.git")
    assert result.bytes_received > 0
    with Repo(str(target)) as repo:
        assert repo.bare
        assert repo.refs.get_symrefs()[b"HEAD"] == b"refs/heads/main"
        assert set(repo.refs.as_dict(b"refs/heads")) == {b"main"}
        assert repo.get_shallow() == {result.commit_sha.encode()}
        # depth 1: the parent commit was not transferred
        parent = repo[result.commit_sha.encode()].parents[0]
        assert parent not in repo.object_store
        # no remote configured: the URL is not stored in the repository
        assert b"remote" not in Path(target, "config").read_bytes()
    with GitTreeReader(target) as reader:
        paths = [entry.path for entry in reader.list_tree(result.commit_sha)]
    assert paths == ["README.md", "src/app.py"]


def test_default_branch_follows_remote_head(tmp_path):
    repo = init_bare_repo(str(tmp_path / "trunk.git"), default_branch="trunk")
    sha = commit_files(repo, {"a.txt": "a"}, branch="trunk")
    commit_files(repo, {"b.txt": "b"}, branch="main")
    with GitHttpServer({"o/trunk.git": repo}) as running:
        result = fetch(running.url("o/trunk.git"), tmp_path / "out")
    assert (result.branch, result.commit_sha) == ("trunk", sha.decode())


def test_fetch_named_branch(server, source, tmp_path):
    result = fetch(server.url("org/repo.git"), tmp_path / "out", branch="dev")
    assert result.branch == "dev"
    assert result.commit_sha == source.refs[b"refs/heads/dev"].decode()
    with Repo(str(tmp_path / "out")) as repo:
        assert repo.refs.get_symrefs()[b"HEAD"] == b"refs/heads/dev"


@pytest.mark.parametrize("branch", ["nope", "release/9.9"])
def test_missing_branch_is_a_user_error_and_leaves_nothing(server, tmp_path, branch):
    target = tmp_path / "out"
    with pytest.raises(BranchNotFound, match=f"branch '{branch}' not found") as info:
        fetch(server.url("org/repo.git"), target, branch=branch)
    assert not info.value.transient
    assert not target.exists()


def test_invalid_branch_name_refused(server, tmp_path):
    with pytest.raises(BranchNotFound, match="not valid"):
        fetch(server.url("org/repo.git"), tmp_path / "out", branch="../../etc")


def test_unknown_repository_is_404(server, tmp_path):
    target = tmp_path / "out"
    with pytest.raises(RepositoryNotFound, match=r"repository not found \(HTTP 404\)") as info:
        fetch(server.url("org/missing.git"), target)
    assert not info.value.transient
    assert not target.exists()


def test_server_error_is_transient(source, tmp_path):
    failing = GitHttpServer({"org/repo.git": source}, fail_with="503 Service Unavailable")
    with failing as running, pytest.raises(ServerUnavailable, match="HTTP 503") as info:
        fetch(running.url("org/repo.git"), tmp_path / "out")
    assert info.value.transient
    assert not (tmp_path / "out").exists()


def test_connection_refused_is_transient(tmp_path):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(ServerUnavailable, match="connection refused") as info:
        fetch(f"http://127.0.0.1:{port}/o/r.git", tmp_path / "out")
    assert info.value.transient


def test_private_host_refused_by_policy_before_anything_is_created(server, tmp_path):
    target = tmp_path / "out"
    with pytest.raises(HostRefused, match=r"private address 127\.0\.0\.1"):
        fetch(server.url("org/repo.git"), target, allow_private_hosts=False)
    assert not target.exists()
    assert server.requests == []


def test_dns_rebinding_the_fetch_connects_only_to_checked_addresses(server, tmp_path):
    """First answer public, second answer loopback: the connection is refused."""
    answers = iter(["8.8.8.8", "127.0.0.1", "127.0.0.1"])

    def rebinding_resolver(host, port, family=0, type=0, proto=0, flags=0):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    url = f"http://rebind.example:{server.port}/org/repo.git"
    with pytest.raises(HostRefused, match=r"private address 127\.0\.0\.1"):
        fetch(url, tmp_path / "out", allow_private_hosts=False, resolve=rebinding_resolver)
    assert server.requests == []
    assert not (tmp_path / "out").exists()


def test_oversized_repository_stops_near_the_cap(tmp_path):
    repo = init_bare_repo(str(tmp_path / "big.git"))
    # Incompressible content: the pack is about as big as the data.
    commit_files(repo, {f"blob{i}.bin": os.urandom(MB) for i in range(8)})
    cap = 1 * MB
    target = tmp_path / "out"
    with (
        GitHttpServer({"o/big.git": repo}) as running,
        pytest.raises(RepositoryTooLarge, match="over the 1 MB limit") as info,
    ):
        fetch(running.url("o/big.git"), target, max_bytes=cap)
    error = info.value
    assert not error.transient
    assert cap < error.received_bytes <= cap + 128 * 1024  # stopped at the first chunk past it
    assert not target.exists()


def test_silent_server_times_out(tmp_path):
    with SilentServer() as silent:
        started = time.monotonic()
        with pytest.raises(FetchTimeout, match="clone timed out after 1 s"):
            fetch(silent.url(), tmp_path / "out", timeout_s=1.0)
        assert time.monotonic() - started < 20  # bounded: the socket timeout alone is 60 s
    assert not (tmp_path / "out").exists()


def test_slow_drip_server_times_out(tmp_path):
    """A server that keeps sending a byte now and then never trips a read timeout."""
    headers = (
        b"HTTP/1.1 200 OK\r\n"
        b"Content-Type: application/x-git-upload-pack-advertisement\r\n"
        b"Content-Length: 100000\r\n\r\n"
    )
    with SilentServer(drip=headers + b"0" * 1000, drip_interval_s=0.05) as dripping:
        started = time.monotonic()
        with pytest.raises(FetchTimeout):
            fetch(dripping.url(), tmp_path / "out", timeout_s=1.5)
        assert time.monotonic() - started < 20


def test_stalled_pack_transfer_times_out(source, tmp_path):
    with (
        GitHttpServer({"org/repo.git": source}, stall_s=30) as stalled,
        pytest.raises(FetchTimeout),
    ):
        fetch(stalled.url("org/repo.git"), tmp_path / "out", timeout_s=1.0)
    assert not (tmp_path / "out").exists()


def test_token_sent_as_basic_auth_and_never_written(source, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    target = tmp_path / "out"
    with GitHttpServer({"org/private.git": source}, auth=("x-access-token", TOKEN)) as private:
        url = private.url("org/private.git")
        with pytest.raises(AuthenticationFailed, match="HTTP 401") as info:
            fetch(url, tmp_path / "anonymous")
        assert not info.value.transient
        with pytest.raises(AuthenticationFailed) as wrong:
            fetch(url, tmp_path / "wrong", token="not-the-token")
        assert "not-the-token" not in str(wrong.value)

        result = fetch(url, target, token=TOKEN)
        assert private.authorization_headers[-1].startswith("Basic ")

        commit_files(source, {"new.txt": "x"}, parent=source.refs[b"refs/heads/main"])
        update = fetch_update(
            target, url, "main", token=TOKEN, max_bytes=MB, timeout_s=30, allow_private_hosts=True
        )
        assert update.changed

    assert result.url == url
    for path in files_under(target):
        assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in caplog.text
    assert not (tmp_path / "anonymous").exists()


def test_token_withheld_from_hosts_not_listed(source, tmp_path):
    with GitHttpServer({"org/private.git": source}, auth=("x-access-token", TOKEN)) as private:
        with pytest.raises(AuthenticationFailed):
            fetch(
                private.url("org/private.git"),
                tmp_path / "out",
                token=TOKEN,
                token_hosts=["github.com"],
            )
        assert private.authorization_headers == []


def test_incremental_fetch_keeps_old_tree_and_reports_changes(server, source, tmp_path):
    target = tmp_path / "out"
    first = fetch(server.url("org/repo.git"), target)
    new_sha = commit_files(
        source,
        {"src/app.py": "def main():\n    return 2\n", "docs/guide.md": "guide\n"},
        parent=source.refs[b"refs/heads/main"],
        message="third",
    )
    update = fetch_update(
        target,
        server.url("org/repo.git"),
        "main",
        max_bytes=MB,
        timeout_s=30,
        allow_private_hosts=True,
    )
    assert update.previous_commit_sha == first.commit_sha
    assert update.commit_sha == new_sha.decode()
    assert update.changed
    with GitTreeReader(target) as reader:
        assert [e.path for e in reader.list_tree(first.commit_sha)] == ["README.md", "src/app.py"]
        diff = reader.diff(first.commit_sha, update.commit_sha)
        assert [e.path for e in diff.added] == ["docs/guide.md"]
        assert [e.path for e in diff.modified] == ["src/app.py"]
        assert diff.deleted == ["README.md"]
        assert reader.read_blob(diff.modified[0].sha) == b"def main():\n    return 2\n"

    again = fetch_update(
        target,
        server.url("org/repo.git"),
        "main",
        max_bytes=MB,
        timeout_s=30,
        allow_private_hosts=True,
    )
    assert not again.changed
    assert again.bytes_received == 0


def test_failed_update_leaves_the_repository_usable(server, source, tmp_path):
    target = tmp_path / "out"
    first = fetch(server.url("org/repo.git"), target)
    commit_files(source, {"huge.bin": os.urandom(2 * MB)}, parent=source.refs[b"refs/heads/main"])
    with pytest.raises(RepositoryTooLarge):
        fetch_update(
            target,
            server.url("org/repo.git"),
            "main",
            max_bytes=MB,
            timeout_s=30,
            allow_private_hosts=True,
        )
    with GitTreeReader(target) as reader:
        assert reader.resolve_commit("HEAD") == first.commit_sha
        assert len(reader.list_tree(first.commit_sha)) == 2
    leftovers = [p for p in files_under(target / "objects") if "tmp" in p.name]
    assert leftovers == []


def test_user_and_system_git_config_are_ignored(server, tmp_path, monkeypatch):
    """A hostile ~/.gitconfig (url rewrite, proxy) changes nothing; it is never read."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        '[url "http://127.0.0.1:9/"]\n\tinsteadOf = http://\n[http]\n\tproxy = http://127.0.0.1:9\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")

    def refuse(*args, **kwargs):
        raise AssertionError("global git configuration was read")

    monkeypatch.setattr(StackedConfig, "default_backends", classmethod(refuse))
    result = fetch(server.url("org/repo.git"), tmp_path / "out")
    assert result.branch == "main"


def test_fetch_over_git_protocol(source, tmp_path):
    backend = DictBackend({"/org/repo.git": source})
    daemon = TCPGitServer(backend, "127.0.0.1", 0)
    thread = threading.Thread(target=daemon.serve_forever, daemon=True)
    thread.start()
    try:
        port = daemon.server_address[1]
        result = fetch(f"git://127.0.0.1:{port}/org/repo.git", tmp_path / "out", branch="dev")
        assert result.commit_sha == source.refs[b"refs/heads/dev"].decode()
        with pytest.raises(GitFetchError):
            fetch(f"git://127.0.0.1:{port}/org/missing.git", tmp_path / "missing")
        assert not (tmp_path / "missing").exists()
    finally:
        daemon.shutdown()
        daemon.server_close()


def test_local_mirror_needs_permission(source, tmp_path):
    with pytest.raises(HostRefused, match="REPO_SEARCH_ALLOW_LOCAL_PATHS"):
        fetch(source.path, tmp_path / "refused")
    result = fetch(source.path, tmp_path / "out", allow_local_paths=True)
    assert result.commit_sha == source.refs[b"refs/heads/main"].decode()
    assert result.url.startswith("file://")


def test_token_is_not_forwarded_when_redirected_to_another_origin(source, tmp_path):
    """A redirect to another host:port gets no credentials (dulwich scopes them by origin)."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    with GitHttpServer({"org/repo.git": source}) as other_origin:

        def redirect(environ, start_response):
            query = environ.get("QUERY_STRING", "")
            location = other_origin.url("org/repo.git") + "/info/refs" + f"?{query}" * bool(query)
            start_response("302 Found", [("Location", location), ("Content-Length", "0")])
            return [b""]

        redirector = make_server("127.0.0.1", 0, redirect, handler_class=QuietHandler)
        thread = threading.Thread(target=redirector.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{redirector.server_address[1]}/org/repo.git"
            result = fetch(url, tmp_path / "out", token=TOKEN)
        finally:
            redirector.shutdown()
            redirector.server_close()
        assert other_origin.requests  # the fetch did go to the redirect target
        assert other_origin.authorization_headers == []
    assert result.commit_sha == source.refs[b"refs/heads/main"].decode()


def test_update_of_a_missing_repository_is_a_clear_error(server, tmp_path):
    with pytest.raises(GitFetchError, match="no repository at"):
        fetch_update(
            tmp_path / "never-fetched",
            server.url("org/repo.git"),
            "main",
            max_bytes=MB,
            timeout_s=30,
            allow_private_hosts=True,
        )


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_https_verifies_certificates_through_the_guarded_connection(source, tmp_path, monkeypatch):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    with GitHttpServer({"org/repo.git": source}) as server:
        server._server.socket = context.wrap_socket(server._server.socket, server_side=True)
        url = server.url("org/repo.git").replace("http://", "https://")

        with pytest.raises(GitFetchError, match="TLS certificate verification failed") as info:
            fetch(url, tmp_path / "untrusted")
        assert not info.value.transient
        assert not (tmp_path / "untrusted").exists()

        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # how operators trust a private CA
        result = fetch(url, tmp_path / "trusted")
    assert result.commit_sha == source.refs[b"refs/heads/main"].decode()
