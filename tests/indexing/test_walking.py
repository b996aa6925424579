"""The walker: which blobs of a tree are indexed, which are skipped and why."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from indexing.git.tree import (
    MODE_EXECUTABLE,
    MODE_FILE,
    MODE_GITLINK,
    MODE_SYMLINK,
    TreeEntry,
)
from indexing.walking import WalkResult, walk_tree


class FakeRepo:
    """An in-memory tree: path -> (mode, content), with a read_blob that records calls."""

    def __init__(self, files: dict[str, bytes | tuple[int, bytes]]) -> None:
        self.blobs: dict[str, bytes] = {}
        self.entries: list[TreeEntry] = []
        self.read: list[str] = []
        self.path_of: dict[str, str] = {}
        for path, value in files.items():
            mode, content = value if isinstance(value, tuple) else (MODE_FILE, value)
            sha = hashlib.sha1(path.encode() + b"\0" + content, usedforsecurity=False).hexdigest()
            self.blobs[sha] = content
            self.path_of[sha] = path
            self.entries.append(TreeEntry(path, mode, sha, len(content)))

    def read_blob(self, sha: str) -> bytes:
        self.read.append(self.path_of[sha])
        return self.blobs[sha]

    def walk(self, **kwargs: Any) -> WalkResult:
        return walk_tree(reversed(self.entries), self.read_blob, **kwargs)


def indexed(result: WalkResult) -> list[str]:
    return [f.path for f in result.files]


def reasons(result: WalkResult) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


def test_nested_gitignore_with_negation_anchoring_and_directory_patterns() -> None:
    repo = FakeRepo(
        {
            ".gitignore": b"*.log\n!important.log\n/generated/\nbuild-*/\n# comment\n",
            "app.log": b"x",
            "important.log": b"keep me",
            "generated/schema.py": b"x = 1\n",
            "src/generated/real.py": b"x = 1\n",  # `/generated/` is anchored to the root
            "build-debug/out.c": b"int x;\n",
            "build-debug.c": b"int y;\n",  # `build-*/` only matches directories
            "src/.gitignore": b"secret.py\n*.tmp\n!keep.tmp\n",
            "src/secret.py": b"PASSWORD = 1\n",
            "src/keep.tmp": b"kept\n",
            "src/drop.tmp": b"dropped\n",
            "secret.py": b"not ignored: the rule lives in src/\n",
            "src/deep/sub/.gitignore": b"!*.log\n",
            "src/deep/sub/trace.log": b"re-included by the deeper .gitignore\n",
            "main.py": b"print('hi')\n",
        }
    )
    result = repo.walk()
    assert indexed(result) == [
        "build-debug.c",
        "important.log",
        "main.py",
        "secret.py",
        "src/deep/sub/trace.log",
        "src/generated/real.py",
        "src/keep.tmp",
    ]
    skipped = reasons(result)
    assert skipped["app.log"] == "ignored by .gitignore"
    assert skipped["generated/"] == "ignored by .gitignore"
    assert skipped["build-debug/"] == "ignored by .gitignore"
    assert skipped["src/secret.py"] == "ignored by .gitignore"
    assert skipped["src/drop.tmp"] == "ignored by .gitignore"
    # ignored files are never read
    assert "src/secret.py" not in repo.read and "generated/schema.py" not in repo.read


def test_a_file_inside_an_ignored_directory_cannot_be_re_included() -> None:
    repo = FakeRepo(
        {
            ".gitignore": b"logs/\n!logs/keep.txt\ncache/*\n!cache/keep.txt\n",
            "logs/keep.txt": b"x\n",
            "cache/keep.txt": b"kept: only the directory's contents were ignored\n",
            "cache/other.txt": b"x\n",
        }
    )
    result = repo.walk()
    assert indexed(result) == ["cache/keep.txt"]
    assert reasons(result) == {
        ".gitignore": "hidden file",
        "cache/other.txt": "ignored by .gitignore",
        "logs/": "ignored by .gitignore",
    }


@pytest.mark.parametrize("target", [b"/etc/passwd", b"../../../../etc/shadow", b"../"])
def test_symlinks_index_nothing_and_are_never_read(target: bytes) -> None:
    repo = FakeRepo({"link": (MODE_SYMLINK, target), "docs/link.md": (MODE_SYMLINK, target)})
    result = repo.walk()
    assert result.files == []
    assert reasons(result) == {"link": "symlink", "docs/link.md": "symlink"}
    assert repo.read == []


def test_submodules_are_skipped_without_reading() -> None:
    repo = FakeRepo({"vendor-lib": (MODE_GITLINK, b""), "a.py": b"x = 1\n"})
    result = repo.walk()
    assert indexed(result) == ["a.py"]
    assert reasons(result) == {"vendor-lib": "submodule"}
    assert repo.read == ["a.py"]


def test_vendored_build_and_hidden_directories_are_skipped_at_any_depth_once() -> None:
    repo = FakeRepo(
        {
            "node_modules/left-pad/index.js": b"module.exports = 1;\n",
            "node_modules/left-pad/package.json": b"{}\n",
            "web/node_modules/react/index.js": b"x\n",
            "crates/core/target/debug/build.rs": b"fn main() {}\n",
            "pkg/__pycache__/mod.cpython-311.pyc": b"\x00\x01",
            ".venv/lib/site.py": b"x\n",
            "proj/my_pkg.egg-info/PKG-INFO": b"x\n",
            ".git/config": b"[core]\n",
            ".idea/workspace.xml": b"<x/>\n",
            ".github/workflows/ci.yml": b"on: push\n",
            ".env": b"SECRET=1\n",
            ".env.example": b"SECRET=\n",
            "src/app.py": b"x = 1\n",
        }
    )
    result = repo.walk()
    assert indexed(result) == [".env.example", ".github/workflows/ci.yml", "src/app.py"]
    assert reasons(result) == {
        ".env": "hidden file",
        ".git/": "hidden directory",
        ".idea/": "hidden directory",
        ".venv/": "vendored directory",
        "crates/core/target/": "vendored directory",
        "node_modules/": "vendored directory",
        "pkg/__pycache__/": "vendored directory",
        "proj/my_pkg.egg-info/": "vendored directory",
        "web/node_modules/": "vendored directory",
    }
    assert sorted(repo.read) == [".env.example", ".github/workflows/ci.yml", "src/app.py"]


def test_large_files_are_skipped_before_being_read() -> None:
    big = b"x = 1\n" * 200_000  # 1.2 MB
    repo = FakeRepo({"big.py": big, "ok.py": b"y = 2\n", "edge.py": b"z" * 100})
    result = repo.walk()
    assert reasons(result) == {"big.py": "too large"}
    assert "big.py" not in repo.read
    limited = repo.walk(max_file_bytes=99)
    assert reasons(limited) == {"big.py": "too large", "edge.py": "too large"}


def test_binary_files_are_skipped() -> None:
    repo = FakeRepo(
        {
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
            "data.weird": b"abc\x00def",
            "font.woff2": b"wOF2",
            "controls.bin2": bytes(range(1, 32)) * 10 + b"\xff",
            "ok.txt": b"hello\n",
        }
    )
    result = repo.walk()
    assert indexed(result) == ["ok.txt"]
    assert reasons(result) == {
        "controls.bin2": "not utf-8 text",
        "data.weird": "binary",
        "font.woff2": "binary",
        "logo.png": "binary",
    }
    # known binary extensions are recognised without reading the blob
    assert "logo.png" not in repo.read and "font.woff2" not in repo.read


def test_a_nul_past_the_first_8_kb_still_makes_a_file_binary() -> None:
    # requests' ext/requests-logo.ai: a PDF whose first NUL comes late. Stored as text it made
    # PostgreSQL refuse the chunk and failed the whole index job.
    late = b"%PDF-1.5\n" + b"% a readable header line\n" * 400 + b"stream\x00\x01\x02"
    repo = FakeRepo({"logo.ai": late, "late.py": b"x = 1\n" * 2000 + b"\x00", "ok.py": b"y\n"})
    result = repo.walk()
    assert indexed(result) == ["ok.py"]
    assert reasons(result) == {"late.py": "binary", "logo.ai": "binary"}


def test_text_decoding_utf8_bom_utf16_and_latin1_fallback() -> None:
    repo = FakeRepo(
        {
            "bom.py": b"\xef\xbb\xbfprint('bom')\n",
            "wide.cs": "class A {}\n".encode("utf-16"),
            "legacy.c": "/* caf\xe9 */\nint x;\n".encode("latin-1"),
            "plain.py": "s = 'héllo'\n".encode(),
        }
    )
    files = {f.path: f for f in repo.walk().files}
    assert files["bom.py"].text == "print('bom')\n"
    assert files["bom.py"].encoding == "utf-8-sig"
    assert files["wide.cs"].text == "class A {}\n"
    assert files["wide.cs"].encoding == "utf-16"
    assert files["legacy.c"].text == "/* café */\nint x;\n"
    assert files["legacy.c"].encoding == "latin-1"
    assert files["plain.py"].text == "s = 'héllo'\n"
    assert files["plain.py"].encoding == "utf-8"


def test_languages_from_extension_name_and_shebang_and_flags() -> None:
    repo = FakeRepo(
        {
            "bin/deploy": (MODE_EXECUTABLE, b"#!/usr/bin/env bash\nset -e\n"),
            "bin/manage": (MODE_EXECUTABLE, b"#!/usr/bin/env python3\nimport sys\n"),
            "scripts/serve": (MODE_EXECUTABLE, b"#!/usr/bin/node\nrequire('x')\n"),
            "Makefile": b"all:\n\techo hi\n",
            "Dockerfile": b"FROM python:3.11\n",
            "README.md": b"# Title\n",
            "docs/guide.py": b"x = 1\n",
            "config/settings.yaml": b"a: 1\n",
            "src/parser.go": b"package p\n",
            "src/parser_test.go": b"package p\n",
            "tests/test_api.py": b"def test(): pass\n",
            "web/src/App.spec.ts": b"it('x')\n",
            "LICENSE": b"MIT\n",
        }
    )
    files = {f.path: (f.language, f.is_test, f.is_doc) for f in repo.walk().files}
    assert files == {
        "bin/deploy": ("shell", False, False),
        "bin/manage": ("python", False, False),
        "scripts/serve": ("javascript", False, False),
        "Makefile": ("makefile", False, False),
        "Dockerfile": ("dockerfile", False, False),
        "README.md": ("markdown", False, True),
        "docs/guide.py": ("python", False, True),
        "config/settings.yaml": ("yaml", False, True),
        "src/parser.go": ("go", False, False),
        "src/parser_test.go": ("go", True, False),
        "tests/test_api.py": ("python", True, False),
        "web/src/App.spec.ts": ("typescript", True, False),
        "LICENSE": ("text", False, True),
    }


def test_lock_files_minified_bundles_and_unsafe_paths() -> None:
    repo = FakeRepo(
        {
            "package-lock.json": b"{}\n",
            "poetry.lock": b"x\n",
            "static/app.min.js": b"var a=1;\n",
            "static/app.js": b"var a = 1;\n",
            "static/bundle.js": b"var a=1;" * 2000,  # one 16 KB line
            "../escape.py": b"x\n",
            "/abs.py": b"x\n",
            "a/./b.py": b"x\n",
        }
    )
    result = repo.walk()
    assert indexed(result) == ["static/app.js"]
    assert reasons(result) == {
        "package-lock.json": "lock file",
        "poetry.lock": "lock file",
        "static/app.min.js": "minified",
        "static/bundle.js": "minified",
        "../escape.py": "unsafe path",
        "/abs.py": "unsafe path",
        "a/./b.py": "unsafe path",
    }


def test_order_is_deterministic_and_a_missing_blob_is_an_error_not_a_crash() -> None:
    repo = FakeRepo({"b.py": b"b\n", "a.py": b"a\n", "c.py": b"c\n"})
    repo.blobs.pop(repo.entries[2].sha)
    result = repo.walk()
    assert indexed(result) == ["a.py", "b.py"]
    assert [(s.path, s.reason) for s in result.errors] == [("c.py", "unreadable blob: KeyError")]


def test_only_paths_reads_just_the_changed_files_but_applies_every_gitignore() -> None:
    repo = FakeRepo(
        {
            ".gitignore": b"*.gen.py\n",
            "a.py": b"a\n",
            "b.py": b"b\n",
            "c.gen.py": b"c\n",
        }
    )
    result = repo.walk(only_paths={"b.py", "c.gen.py"})
    assert indexed(result) == ["b.py"]
    assert reasons(result) == {"c.gen.py": "ignored by .gitignore"}
    assert sorted(repo.read) == [".gitignore", "b.py"]
