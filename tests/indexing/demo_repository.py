"""The demo repository of the end-to-end indexing tests: its files, and helpers to add it
through the API and wait for its job (the ``served`` fixture in conftest.py serves it)."""

from __future__ import annotations

import time

from indexing.models import IndexJob
from tests.accounts_support import token_client
from tests.indexing.git_server import Symlink

PARSER = '''"""HTTP header parsing."""


def parse_http_header(line):
    """Split one header line into a name and a value."""
    name, _, value = line.partition(":")
    return name.strip().lower(), value.strip()


class HeaderCache:
    """Remembers parsed headers."""

    def __init__(self):
        self.items = {}

    def lookup(self, line):
        if line not in self.items:
            self.items[line] = parse_http_header(line)
        return self.items[line]
'''

UTIL_JS = """export function retryWithBackoff(fn, attempts) {
  for (let i = 0; i < attempts; i++) {
    try { return fn(); } catch (e) { if (i === attempts - 1) throw e; }
  }
}
"""

FILES: dict[str, object] = {
    "src/app/parser.py": PARSER,
    "src/app/util.js": UTIL_JS,
    "README.md": "# Demo\n\nA demo repository for reposearch.\n",
    "tests/test_parser.py": "from app.parser import parse_http_header\n\n\ndef test_parse():\n    assert parse_http_header('A: b') == ('a', 'b')\n",
    "node_modules/lib/index.js": "module.exports = 1;\n",
    "generated/out.py": "GENERATED = True\n",
    ".gitignore": "generated/\n",
    "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
    "big.txt": "x" * (1_048_576 + 10),
    "link_passwd": Symlink("/etc/passwd"),
    "link_up": Symlink("../../"),
}
EXPECTED_PATHS = {"src/app/parser.py", "src/app/util.js", "README.md", "tests/test_parser.py"}


def modules(count: int, salt: int) -> dict[str, str]:
    """``count`` small Python modules (a function and a class each, about 3 chunks), their
    contents changed by ``salt``: a repository big enough for several store batches."""
    return {
        f"pkg/module_{n}.py": f"def function_{n}(value):\n    return value * {n} + {salt}\n\n\n"
        f"class Model{n}:\n    def method(self):\n        return function_{n}({salt})\n"
        for n in range(count)
    }


def wait_for_job(job_id: int, seconds: float = 180.0) -> IndexJob:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = IndexJob.objects.get(pk=job_id)
        if job.is_finished:
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} did not finish: {IndexJob.objects.get(pk=job_id).state}")


def add(url: str) -> dict:
    response = token_client().post("/api/repos", {"url": url}, format="json")
    assert response.status_code == 202, response.json()
    return response.json()
