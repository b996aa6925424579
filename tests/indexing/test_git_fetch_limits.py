"""Fetch limits and failures: size cap, timeouts, transient server errors."""

from __future__ import annotations

import os
import socket
import time

import pytest
from urllib3.connection import HTTPConnection

from indexing.git.errors import (
    FetchTimeout,
    RepositoryTooLarge,
    ServerUnavailable,
)
from indexing.git.fetch import _check_url
from indexing.git.fetch_errors import classify_fetch_error
from indexing.git.transport import TransferGuard
from tests.indexing.git_fetch_support import MB, fetch
from tests.indexing.git_server import (
    GitHttpServer,
    SilentServer,
    commit_files,
    init_bare_repo,
)


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


def _closed_under_urllib3() -> AttributeError:
    """What urllib3 2.x raises when another thread closes a connection between sending a
    request and reading its answer (a git server shutting down under a poll)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    connection = HTTPConnection("127.0.0.1", server.getsockname()[1])
    try:
        connection.request("GET", "/o/r.git/info/refs?service=git-upload-pack")
        connection.sock.close()
        connection.sock = None  # what HTTPConnection.close() leaves
        connection.getresponse()
    except AttributeError as error:
        return error
    finally:
        server.close()
    raise AssertionError("urllib3 no longer raises AttributeError here")


def test_a_connection_closed_under_the_http_client_reads_as_lost():
    url = "http://127.0.0.1:9/o/r.git"
    checked = _check_url(url, True, False, socket.getaddrinfo)
    with TransferGuard(timeout_s=5, max_bytes=MB, allow_private_hosts=True) as guard:
        lost = classify_fetch_error(_closed_under_urllib3(), guard, checked)
        try:
            None.settimeout(1)  # type: ignore[attr-defined]  # the same words, our own code
        except AttributeError as error:
            ours = classify_fetch_error(error, guard, checked)
    assert isinstance(lost, ServerUnavailable) and lost.transient
    assert str(lost) == "the connection to 127.0.0.1 was lost"
    assert str(ours) == "fetch from 127.0.0.1 failed (AttributeError)"  # a bug stays visible


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
