"""Fetch limits and failures: size cap, timeouts, transient server errors."""

from __future__ import annotations

import os
import socket
import time

import pytest

from indexing.git.errors import (
    FetchTimeout,
    RepositoryTooLarge,
    ServerUnavailable,
)
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
