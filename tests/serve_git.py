"""Serve bare repositories over git smart HTTP until killed: ``python -m tests.serve_git ADDRESS
NAME=PATH ...`` (the multi-host tests run it on the database host's address, inside its
network namespace). Prints ``serving <port>`` once the socket listens."""

from __future__ import annotations

import sys
import threading

from dulwich.repo import Repo

from tests.indexing.git_server import GitHttpServer


def main(argv: list[str]) -> None:
    address, *pairs = argv
    repos = {name: Repo(path) for name, path in (pair.split("=", 1) for pair in pairs)}
    server = GitHttpServer(repos, host=address)
    with server:
        print(f"serving {server.port}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
