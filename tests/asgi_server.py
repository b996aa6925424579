"""The whole ASGI app (Django + ``/mcp``) under uvicorn in a thread, on a free local port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving_the_site(monkeypatch: pytest.MonkeyPatch, app: Any = None) -> Iterator[str]:
    """Yields the base URL while the site (or ``app``, one ``build_application`` made) is
    served."""
    from django.db import connections

    from reposearch.asgi import build_application

    # Request threads must not keep connections open past the test (the database is dropped).
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 0)
    port = _free_port()
    config = uvicorn.Config(
        app or build_application(), host="127.0.0.1", port=port, lifespan="on", log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
