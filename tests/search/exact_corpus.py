"""A small real git repository for exact/regex search tests, fetched and indexed for real."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from indexing.models import Repository
from tests.indexing.real_run import index, mirror
from tests.shared_rows import rows_fixture, shared_rows


def _long_text() -> str:
    lines = []
    for n in range(1, 321):
        if n % 37 == 0:
            lines.append(f"line {n}: the Client sends follow_redirects=True here")
        elif n % 50 == 0:
            lines.append(f"line {n}: return value {n}")
        else:
            lines.append(f"line {n}: filler text number {n}")
    return "\n".join(lines) + "\n"


FILES: dict[str, object] = {
    "src/httpclient/client.py": (
        "import os\n"
        "\n"
        "class Client:\n"
        '    """An HTTP client; see HTTP_PROXY / HTTPS_PROXY."""\n'
        "\n"
        "    def __init__(self, follow_redirects=True):\n"
        "        self.follow_redirects = follow_redirects\n"
        "\n"
        "    def send(self, request):\n"
        "        return self._transport.send(request)\n"
        "\n"
        "\n"
        "def make_auth(user):\n"
        "    return user\n"
        "\n"
        "def token_auth(token):\n"
        '    return {"Authorization": f"Bearer {token}"}\n'
        "\n"
        "CLIENT_DEFAULT = Client()\n"
    ),
    "src/httpclient/util.js": (
        "export function pick(obj) {\n"
        "  return obj.foo.bar[baz]();\n"
        "}\n"
        "const arrow = (x) => x -> y;\n"
        "let walrus := 1; // not js, but text\n"
    ),
    "src/native/vec.cpp": (
        "#include <vector>\n"
        "std::vector<int> v;\n"
        "int client_count = 0;\n"
        "void push() { v.push_back(client_count); }\n"
    ),
    "tests/test_client.py": (
        "from httpclient.client import Client\n"
        "\n"
        "def test_client_follows():\n"
        "    assert Client(follow_redirects=True).follow_redirects\n"
    ),
    "docs/guide.md": "# Guide\n\nCreate a `Client` and call `send`.\nUnicode: café naïve\n",
    "notes/long.txt": _long_text(),
}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mirror(tmp_path_factory.mktemp("exact"), FILES)


@rows_fixture()
def indexed(
    source: Path, django_db_setup: None, django_db_blocker: Any
) -> Iterator[tuple[Path, Repository]]:
    """``acme/httpclient``, indexed once for the module's tests, which only read it (a test's
    own rows are rolled back after it: tests/shared_rows.py). Never committed, so the jobs'
    queued tasks are never sent."""
    with shared_rows(
        django_db_blocker, lambda: index(source, "acme/httpclient"), "indexed"
    ) as repo:
        yield source, repo


@rows_fixture()
def three_repositories(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[dict[str, tuple[Path, Repository]]]:
    """The corpus in three repositories, named in an order that differs from the indexing's;
    indexed once for the module (tests/shared_rows.py)."""
    names = ["zeta/httpclient", "acme/httpclient", "acme/httpclient-fork"]

    def build() -> dict[str, tuple[Path, Repository]]:
        found = {}
        for name in names:
            path = mirror(tmp_path_factory.mktemp("exact-three"), FILES)
            found[name] = (path, index(path, name))
        return found

    with shared_rows(django_db_blocker, build, "three_repositories") as found:
        yield found
