"""Language detection and the test/doc flags used by the search scope filters."""

from __future__ import annotations

import pytest

from indexing.languages import (
    EXTENSIONS,
    FILENAMES,
    INTERPRETERS,
    detect_language,
    is_doc_path,
    is_test_path,
)


def test_more_than_sixty_languages_are_known() -> None:
    languages = set(EXTENSIONS.values()) | set(FILENAMES.values()) | set(INTERPRETERS.values())
    assert len(languages) >= 60
    assert all(lang == lang.lower() and " " not in lang for lang in languages)


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("src/app.py", "python"),
        ("types.pyi", "python"),
        ("web/index.js", "javascript"),
        ("web/App.jsx", "javascript"),
        ("web/mod.mjs", "javascript"),
        ("web/api.ts", "typescript"),
        ("web/App.tsx", "tsx"),
        ("cmd/main.go", "go"),
        ("src/lib.rs", "rust"),
        ("src/main/java/A.java", "java"),
        ("lib/x.c", "c"),
        ("include/x.h", "c"),
        ("lib/x.cpp", "cpp"),
        ("lib/x.hpp", "cpp"),
        ("App/Program.cs", "csharp"),
        ("lib/a.rb", "ruby"),
        ("index.php", "php"),
        ("README.md", "markdown"),
        ("ci.yml", "yaml"),
        ("pyproject.toml", "toml"),
        ("SRC/MAIN.PY", "python"),  # extensions are case-insensitive
        ("Makefile", "makefile"),
        ("GNUmakefile", "makefile"),
        ("deploy/Dockerfile", "dockerfile"),
        ("Dockerfile.prod", "dockerfile"),
        ("api.Dockerfile", "dockerfile"),
        ("CMakeLists.txt", "cmake"),
        ("Gemfile", "ruby"),
        ("Rakefile", "ruby"),
        ("Jenkinsfile", "groovy"),
        ("BUILD.bazel", "starlark"),
        ("go.mod", "gomod"),
        ("requirements-dev.txt", "text"),
        ("notes.txt", "text"),
        ("schema.sql", "sql"),
        ("main.tf", "terraform"),
        ("page.vue", "vue"),
        ("x.unknownext", None),
        ("noextension", None),
    ],
)
def test_detect_from_name_and_extension(path: str, language: str | None) -> None:
    assert detect_language(path) == language


@pytest.mark.parametrize(
    ("head", "language"),
    [
        (b"#!/usr/bin/env python3\nimport os\n", "python"),
        (b"#!/usr/bin/python3.11 -u\n", "python"),
        (b"#!/bin/bash\nset -e\n", "shell"),
        (b"#!/bin/sh\n", "shell"),
        (b"#!/usr/bin/env node\n", "javascript"),
        (b"#!/usr/bin/env -S node --experimental-modules\n", "javascript"),
        (b"#!/usr/bin/env ruby\n", "ruby"),
        (b"#!/usr/bin/perl -w\n", "perl"),
        (b"#!/usr/bin/env NODE_ENV=prod deno run\n", "typescript"),
        (b"#! /usr/bin/env php\n", "php"),
        (b"#!/usr/bin/env\n", None),
        (b"#!/opt/unknown-interpreter\n", None),
        (b"not a shebang\n", None),
        (b"", None),
    ],
)
def test_detect_from_shebang(head: bytes, language: str | None) -> None:
    assert detect_language("bin/tool", head) == language


def test_extension_wins_over_shebang() -> None:
    assert detect_language("tool.rb", b"#!/usr/bin/env python3\n") == "ruby"


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_views.py",
        "app/tests.py",
        "pkg/test_utils.py",
        "pkg/utils_test.py",
        "conftest.py",
        "server/handler_test.go",
        "web/src/App.test.tsx",
        "web/src/api.spec.ts",
        "web/src/__tests__/App.js",
        "src/test/java/com/acme/FooTest.java",
        "src/main/java/com/acme/FooTest.java",
        "Acme.Tests/ServiceTests.cs",
        "spec/models/user_spec.rb",
        "test/unit/x.c",
        "pkg/testdata/input.json",
    ],
)
def test_test_paths(path: str) -> None:
    assert is_test_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/latest.py",
        "src/contest.go",
        "src/Latest.java",
        "src/attestation.ts",
        "src/testing_utils_not.py",
        "src/protest/handler.py",
        "manifest.json",
    ],
)
def test_not_test_paths(path: str) -> None:
    assert not is_test_path(path)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("docs/index.rst", True),
        ("docs/conf.py", True),
        ("README.md", True),
        ("README", True),
        ("LICENSE", True),
        ("CHANGELOG.md", True),
        ("CONTRIBUTING.rst", True),
        ("config/app.yaml", True),
        ("pyproject.toml", True),
        ("setup.cfg", True),
        ("package.json", True),
        ("notes.txt", True),
        ("src/app.py", False),
        ("src/readme_parser.py", False),
        ("Makefile", False),
        ("Dockerfile", False),
    ],
)
def test_doc_paths(path: str, expected: bool) -> None:
    assert is_doc_path(path, detect_language(path)) is expected
