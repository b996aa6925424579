"""Servers for the polling tests: `git daemon` (git://) and a byte-counting TCP relay."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class GitDaemon:
    """The real `git daemon` serving every repository under `base` read-only on 127.0.0.1."""

    def __init__(self, base: Path) -> None:
        if shutil.which("git") is None:
            raise RuntimeError("git is not installed")
        self.base = base
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> GitDaemon:
        self.process = subprocess.Popen(
            [
                "git", "daemon", "--reuseaddr", "--export-all", "--informative-errors",
                f"--base-path={self.base}", "--listen=127.0.0.1", f"--port={self.port}",
                str(self.base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.base), "GIT_CONFIG_NOSYSTEM": "1"},
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError("git daemon did not start listening")

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


class CountingRelay:
    """Forwards 127.0.0.1:<port> to a target port and counts the bytes the target sends back."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = int(self._sock.getsockname()[1])
        self.bytes_from_server = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> CountingRelay:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, count: bool) -> None:
        try:
            while data := source.recv(65536):
                if count:
                    with self._lock:
                        self.bytes_from_server += len(data)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            # Pass the half-close on (the client shuts its write side after its request).
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
