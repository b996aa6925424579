"""A small real git repository for exact/regex search tests, fetched and indexed for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexing.models import Repository
from tests.indexing.real_run import index, mirror


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


@pytest.fixture
def indexed(source: Path) -> tuple[Path, Repository]:
    # Indexed inside the test's transaction, so the jobs' queued tasks are never sent.
    return source, index(source, "acme/httpclient")
