"""Servers that misbehave on purpose, for the hostile-remote tests: one that answers every
request with a redirect, and one that drips a response and hangs up before it is complete."""

from __future__ import annotations

import http.server
import socket
import threading
import time

from tests.indexing.git_server import TcpServer


class RedirectServer:
    """Answers every request with ``302 Location: <target>``; no target: to itself (a loop)."""

    def __init__(self, target: str = "") -> None:
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests += 1
                self.send_response(302)
                self.send_header("Location", target or self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.requests = 0
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, name: str = "org/repo.git") -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> RedirectServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class DripThenHangUpServer(TcpServer):
    """Sends a response header a byte at a time and closes the connection after ``hang_up_s``:
    each attempt looks like a transient network failure, just before any per-attempt timeout."""

    HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\n"

    def __init__(self, hang_up_s: float, drip_interval_s: float = 0.2) -> None:
        super().__init__()
        self.hang_up_s, self.drip_interval_s = hang_up_s, drip_interval_s

    def serve(self, conn: socket.socket) -> None:
        ends = time.monotonic() + self.hang_up_s
        self.drip(conn, self.HEAD, self.drip_interval_s, b"X", until=ends, close=True)
