"""Guarded network transport for dulwich: checked addresses, a hard deadline, a byte cap.

Every socket a fetch opens is created by `TransferGuard.connect`, which resolves the
host once, refuses it unless every address passes the URL policy, and connects to the
checked address itself (no second DNS lookup, so no rebinding window). This applies to
redirects too, because the HTTP client never opens a socket on its own.

The deadline is enforced three ways, so neither a silent nor a slow-drip server can hold
a worker: socket timeouts on connect and read; a check in every pack-data callback; and
a watchdog timer that shuts down every registered socket when the deadline passes,
which unblocks any read in progress.

Proxies from the environment (`https_proxy`, ...) and the user's git configuration are
deliberately not used: both would bypass the address check.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import urllib3
from dulwich.client import (
    DEFAULT_GIT_PROTOCOL_VERSION_FETCH,
    DEFAULT_GIT_PROTOCOL_VERSION_SEND,
    Protocol,
    TCPGitClient,
    _fileno_can_read,
)
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from indexing.git.errors import FetchTimeout, RepositoryTooLarge
from indexing.git.url_safety import Resolver, resolve_allowed_addresses

CONNECT_TIMEOUT_S = 15.0
READ_TIMEOUT_S = 60.0


class TransferGuard:
    """Per-fetch policy shared by every connection of one fetch."""

    def __init__(
        self,
        *,
        timeout_s: float,
        max_bytes: int,
        allow_private_hosts: bool,
        resolve: Resolver = socket.getaddrinfo,
    ) -> None:
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.allow_private_hosts = allow_private_hosts
        self.resolve = resolve
        self.received_bytes = 0
        self.expired = False
        self._started = time.monotonic()
        self.deadline = self._started + timeout_s
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(timeout_s, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> TransferGuard:
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._timer.cancel()

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._started

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def timeout_error(self) -> FetchTimeout:
        return FetchTimeout(f"clone timed out after {self.timeout_s:g} s")

    def check_deadline(self) -> None:
        if self.expired or time.monotonic() >= self.deadline:
            self.expired = True
            raise self.timeout_error()

    def count(self, nbytes: int) -> None:
        """Account for received pack bytes; raise as soon as the cap is passed."""
        self.received_bytes += nbytes
        if self.received_bytes > self.max_bytes:
            limit_mb = self.max_bytes / (1024 * 1024)
            raise RepositoryTooLarge(
                f"repository is over the {limit_mb:g} MB limit",
                received_bytes=self.received_bytes,
                limit_bytes=self.max_bytes,
            )
        self.check_deadline()

    def connect(self, host: str, port: int) -> socket.socket:
        """Open a TCP connection to a checked address of `host`."""
        self.check_deadline()
        addresses = resolve_allowed_addresses(
            host, port, allow_private_hosts=self.allow_private_hosts, resolve=self.resolve
        )
        last_error: OSError = OSError(f"no address found for {host}")
        for family, sockaddr in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.settimeout(min(CONNECT_TIMEOUT_S, max(self.remaining_s(), 0.1)))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                last_error = exc
                continue
            sock.settimeout(min(READ_TIMEOUT_S, self.timeout_s))
            self.register(sock)
            return sock
        raise last_error

    def register(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            expired = self.expired
        if expired:
            _shutdown(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    # The base-class method on purpose: SSLSocket.shutdown would drop its SSL object
    # under a reader in another thread; shutting down the fd just ends the read.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def make_pool_manager(guard: TransferGuard) -> urllib3.PoolManager:
    """A urllib3 pool manager whose connections all go through `guard`."""

    class GuardedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return guard.connect(self._dns_host, self.port)

        def connect(self) -> None:
            super().connect()
            guard.register(self.sock)

    class GuardedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return guard.connect(self._dns_host, self.port)

        def connect(self) -> None:
            super().connect()
            guard.register(self.sock)

    class GuardedHTTPPool(HTTPConnectionPool):
        ConnectionCls = GuardedHTTPConnection

    class GuardedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = GuardedHTTPSConnection

    manager = urllib3.PoolManager(
        headers={"User-Agent": "reposearch (dulwich)"},
        timeout=urllib3.Timeout(
            connect=CONNECT_TIMEOUT_S, read=min(READ_TIMEOUT_S, guard.timeout_s)
        ),
        retries=urllib3.Retry(total=4, connect=1, read=0, status=0, redirect=3),
        cert_reqs="CERT_REQUIRED",
    )
    manager.pool_classes_by_scheme = {"http": GuardedHTTPPool, "https": GuardedHTTPSPool}
    return manager


class GuardedTCPGitClient(TCPGitClient):
    """git:// client whose socket comes from `TransferGuard.connect`."""

    def __init__(self, host: str, port: int | None, guard: TransferGuard, **kwargs: Any):
        super().__init__(host, port=port, **kwargs)
        self._guard = guard

    def _connect(
        self,
        cmd: bytes,
        path: str | bytes,
        protocol_version: int | None = None,
    ) -> tuple[Protocol, Callable[[], bool], IO[bytes] | None]:
        # Mirrors TCPGitClient._connect (dulwich 1.2) with the socket from the guard.
        if not isinstance(path, bytes):
            path = path.encode(self._remote_path_encoding)
        sock = self._guard.connect(self._host, self._port)
        rfile = sock.makefile("rb", -1)
        wfile = sock.makefile("wb", 0)

        def close() -> None:
            rfile.close()
            wfile.close()
            sock.close()

        def shutdown_write() -> None:
            wfile.flush()
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)

        proto = Protocol(
            rfile.read,
            wfile.write,
            close,
            report_activity=self._report_activity,
            shutdown_write=shutdown_write,
        )
        if path.startswith(b"/~"):
            path = path[1:]
        if cmd == b"upload-pack":
            self.protocol_version = (
                DEFAULT_GIT_PROTOCOL_VERSION_FETCH if protocol_version is None else protocol_version
            )
        else:
            self.protocol_version = DEFAULT_GIT_PROTOCOL_VERSION_SEND
        version_str = b""
        if cmd == b"upload-pack" and self.protocol_version == 2:
            version_str = b"\0\0version=%d\0" % self.protocol_version
        proto.send_cmd(b"git-" + cmd, path, b"host=" + self._host.encode("ascii") + version_str)
        return proto, lambda: _fileno_can_read(sock.fileno()), None
