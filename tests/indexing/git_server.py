"""An in-process git smart-HTTP server on 127.0.0.1 for tests and benchmarks.

Serves dulwich repositories with dulwich's own WSGI application (protocol v0/v1/v2,
shallow fetches) from a threaded wsgiref server. Options cover what the git layer must
cope with: HTTP basic auth (and a record of the Authorization headers received), and
servers that stall. Also builds repositories from a dict of files without a checkout.

Usage:
    with GitHttpServer({"org/repo.git": repo}) as server:
        url = server.url("org/repo.git")
"""

from __future__ import annotations

import base64
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self
from wsgiref.simple_server import WSGIServer, make_server

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo
from dulwich.server import DictBackend
from dulwich.web import WSGIRequestHandlerLogger, make_wsgi_chain


@dataclass(frozen=True)
class Symlink:
    """A file entry that is a symbolic link to `target` (stored as mode 120000)."""

    target: str


FileContent = bytes | str | Symlink


def commit_files(
    repo: Repo,
    files: Mapping[str, FileContent],
    *,
    branch: str = "main",
    message: str = "commit",
    parent: bytes | None = None,
    when: int = 1_700_000_000,
) -> bytes:
    """Commit `files` (path -> content) as the whole tree of a new commit on `branch`.

    Works on bare repositories (no checkout). Returns the commit sha (hex bytes).
    """
    store = repo.object_store
    root: dict[str, Any] = {}
    for path, content in files.items():
        parts = path.split("/")
        node = root
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = content

    def write_tree(node: dict[str, Any]) -> bytes:
        tree = Tree()
        for name, value in node.items():
            if isinstance(value, dict):
                tree.add(name.encode(), 0o040000, write_tree(value))
                continue
            if isinstance(value, Symlink):
                blob, mode = Blob.from_string(value.target.encode()), 0o120000
            else:
                data = value.encode() if isinstance(value, str) else value
                blob, mode = Blob.from_string(data), 0o100644
            store.add_object(blob)
            tree.add(name.encode(), mode, blob.id)
        store.add_object(tree)
        return tree.id

    commit = Commit()
    commit.tree = write_tree(root)
    commit.parents = [parent] if parent else []
    commit.author = commit.committer = b"Test <test@example.com>"
    commit.author_time = commit.commit_time = when
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = message.encode()
    store.add_object(commit)
    ref = b"refs/heads/" + branch.encode()
    repo.refs[ref] = commit.id
    return commit.id


def init_bare_repo(path: str, default_branch: str = "main") -> Repo:
    """Create an empty bare repository whose HEAD points at `default_branch`."""
    repo = Repo.init_bare(path, mkdir=True, default_branch=default_branch.encode())
    return repo


class _ThreadingWSGIServer(WSGIServer):
    daemon_threads = True

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._handle_in_thread, args=(request, client_address), daemon=True
        )
        thread.start()

    def _handle_in_thread(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that abort mid-pack are expected in these tests


class GitHttpServer:
    """Serve repositories over git smart HTTP on ``host`` (127.0.0.1) in a background thread.

    `auth`: (username, password) required as HTTP basic auth, else 401.
    `stall_s`: every request sleeps this long before answering (a stalled server).
    `chunk_delay_s`: pause between response chunks (a slow server).
    `fail_with`: answer every request with this HTTP status line, e.g. "503 Unavailable".
    """

    def __init__(
        self,
        repos: Mapping[str, Repo],
        *,
        auth: tuple[str, str] | None = None,
        stall_s: float = 0.0,
        chunk_delay_s: float = 0.0,
        fail_with: str | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.repos = dict(repos)
        self.host = host
        self.auth = auth
        self.stall_s = stall_s
        self.chunk_delay_s = chunk_delay_s
        self.fail_with = fail_with
        self.authorization_headers: list[str] = []
        self.requests: list[str] = []
        self.bytes_sent = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        backend = DictBackend({"/" + name.strip("/"): repo for name, repo in self.repos.items()})
        self._git_app = make_wsgi_chain(backend)
        self._server = make_server(
            host,
            0,
            self._app,
            server_class=_ThreadingWSGIServer,
            handler_class=WSGIRequestHandlerLogger,
        )
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://{self.host}:{self.port}/{name.strip('/')}"

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def _app(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        self.requests.append(f"{environ['REQUEST_METHOD']} {environ.get('PATH_INFO', '')}")
        header = environ.get("HTTP_AUTHORIZATION")
        if header:
            self.authorization_headers.append(header)
        if self.stall_s:
            self._stop.wait(self.stall_s)
        if self.fail_with is not None:
            start_response(self.fail_with, [("Content-Length", "0")])
            return [b""]
        if self.auth is not None:
            expected = "Basic " + base64.b64encode(":".join(self.auth).encode()).decode()
            if header != expected:
                start_response(
                    "401 Unauthorized",
                    [("WWW-Authenticate", 'Basic realm="git"'), ("Content-Length", "0")],
                )
                return [b""]

        def counting_start_response(status: str, headers: Any, exc_info: Any = None) -> Any:
            write = start_response(status, headers, exc_info)

            def counted_write(data: bytes) -> Any:
                self._account(data)
                return write(data)

            return counted_write

        return self._count(self._git_app(environ, counting_start_response))

    def _account(self, chunk: bytes) -> None:
        with self._lock:
            self.bytes_sent += len(chunk)
        if self.chunk_delay_s and chunk:
            self._stop.wait(self.chunk_delay_s)

    def _count(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        # dulwich writes through start_response's write() and through the iterable.
        try:
            for chunk in chunks:
                self._account(chunk)
                if self._stop.is_set():
                    return
                yield chunk
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()


class TcpServer:
    """A bare TCP listener on 127.0.0.1 that hands every connection it accepts to ``serve``
    (called on the accepting thread: start a thread there for anything that takes time).
    Leaving the ``with`` block closes the listener and every accepted connection."""

    def __init__(self) -> None:
        self.connections = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def url(self, name: str = "org/repo.git") -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._sock.close()
        for conn in self._conns:
            conn.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            self._conns.append(conn)
            self.serve(conn)

    def serve(self, conn: socket.socket) -> None:
        """Nothing: the connection stays open and silent."""

    def drip(
        self, conn: socket.socket, payload: bytes, interval_s: float, filler: bytes,
        until: float = float("inf"), close: bool = False,
    ) -> None:  # fmt: skip
        """Send ``payload`` a byte at a time, then ``filler`` bytes, until ``until`` (monotonic
        time) or the server stops, on a thread of the connection's own; ``close``: hang up then."""

        def run() -> None:
            position = 0
            try:
                while time.monotonic() < until and not self._stop.is_set():
                    conn.sendall(payload[position : position + 1] or filler)
                    position += 1
                    time.sleep(interval_s)
            except OSError:
                return
            finally:
                if close:
                    conn.close()

        threading.Thread(target=run, daemon=True).start()


class SilentServer(TcpServer):
    """Accepts TCP connections on 127.0.0.1 and never sends a byte (or drips one slowly: a
    response that never ends, headers first, then one byte at a time)."""

    def __init__(self, drip: bytes = b"", drip_interval_s: float = 0.5) -> None:
        super().__init__()
        self.payload = drip
        self.drip_interval_s = drip_interval_s

    def serve(self, conn: socket.socket) -> None:
        if self.payload:
            self.drip(conn, self.payload, self.drip_interval_s, b" ")
