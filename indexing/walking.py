"""Choosing which blobs of a commit's tree get indexed, and decoding them.

The walker works on the flat list of a commit's tree entries (``indexing.git.tree``) and a
``read_blob(sha) -> bytes`` callable; there is no checkout on disk, so a symlink is only
ever an entry with ``MODE_SYMLINK`` and is never followed.

Rules, in the order they are applied (the first one that fires is the recorded reason):

1. unsafe paths (absolute, ``..``, empty components) -> ``"unsafe path"``
2. submodules and symlinks -> ``"submodule"`` / ``"symlink"`` (never followed or read)
3. hidden directories (``.git``, ``.idea``...) except ``ALLOWED_HIDDEN_DIRECTORIES``
   (CI configuration such as ``.github/workflows`` is worth searching) ->
   ``"hidden directory"``, recorded once per directory
4. vendored / build / cache directories at any depth (``VENDORED_DIRECTORIES``) ->
   ``"vendored directory"``, recorded once per directory
5. hidden files except ``ALLOWED_HIDDEN_FILES`` -> ``"hidden file"``
6. ``.gitignore`` files at every level, with git semantics: deeper files win, the last
   matching pattern of a file wins, ``!`` re-includes, a pattern with a ``/`` is anchored
   to its ``.gitignore``'s directory, ``dir/`` only matches directories, and nothing under
   an ignored directory can be re-included (git does not descend into it).  Patterns are
   compiled with ``pathspec``'s ``GitIgnoreSpec``.  Note that git itself keeps tracking
   files that were committed before being ignored; we skip them because they are almost
   always generated output -> ``"ignored by .gitignore"``
7. dependency lock files and minified bundles -> ``"lock file"`` / ``"minified"``
8. ``entry.size > max_file_bytes`` -> ``"too large"``, decided before the blob is read
9. binary content (a known binary extension such as ``.png``, decided without reading
   the blob, or a NUL byte in the first 8 KB) -> ``"binary"``
10. undecodable content -> ``"not utf-8 text"``.  UTF-8 (with or without BOM) and
    UTF-16 with a BOM are decoded; other 8-bit text that has almost no control characters
    is decoded as Latin-1 and marked with ``encoding="latin-1"`` rather than lost.

Output is sorted by path so that a re-run over the same tree is byte-for-byte identical.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import pathspec

from indexing.git.tree import MODE_EXECUTABLE, MODE_FILE, TreeEntry
from indexing.languages import detect_language, is_doc_path, is_test_path

DEFAULT_MAX_FILE_BYTES = 1_048_576
BINARY_SNIFF_BYTES = 8192
MAX_GITIGNORE_BYTES = 256 * 1024

SKIP_UNSAFE_PATH = "unsafe path"
SKIP_SYMLINK = "symlink"
SKIP_SUBMODULE = "submodule"
SKIP_HIDDEN_DIRECTORY = "hidden directory"
SKIP_VENDORED = "vendored directory"
SKIP_HIDDEN_FILE = "hidden file"
SKIP_GITIGNORE = "ignored by .gitignore"
SKIP_LOCK_FILE = "lock file"
SKIP_MINIFIED = "minified"
SKIP_TOO_LARGE = "too large"
SKIP_BINARY = "binary"
SKIP_NOT_TEXT = "not utf-8 text"
SKIP_UNREADABLE = "unreadable blob"

ALLOWED_HIDDEN_DIRECTORIES: frozenset[str] = frozenset(
    {".github", ".gitlab", ".circleci", ".devcontainer", ".buildkite"}
)
ALLOWED_HIDDEN_FILES: frozenset[str] = frozenset(
    {
        ".gitlab-ci.yml", ".travis.yml", ".pre-commit-config.yaml", ".env.example",
        ".env.sample", ".eslintrc.js", ".eslintrc.cjs", ".eslintrc.json", ".eslintrc.yml",
        ".babelrc", ".prettierrc", ".editorconfig", ".dockerignore",
    }
)  # fmt: skip
VENDORED_DIRECTORIES: frozenset[str] = frozenset(
    {
        # JavaScript
        "node_modules", "bower_components", "jspm_packages", ".next", ".nuxt",
        ".svelte-kit", ".parcel-cache",
        # build output
        "target", "dist", "build", "_build", "out-tsc", "cmake-build-debug",
        "cmake-build-release", "DerivedData",
        # vendored dependencies
        "vendor", "third_party", "third-party", "thirdparty", "Pods", "Carthage",
        # Python environments and caches
        ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
        ".ruff_cache", "site-packages", ".eggs", ".ipynb_checkpoints",
        # other caches / coverage
        ".gradle", ".terraform", "htmlcov", ".cache",
    }
)  # fmt: skip
LOCK_FILES: frozenset[str] = frozenset(
    {
        "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
        "bun.lockb", "Cargo.lock", "poetry.lock", "Pipfile.lock", "uv.lock", "pdm.lock",
        "Gemfile.lock", "composer.lock", "go.sum", "flake.lock", "mix.lock",
        "pubspec.lock", "Podfile.lock", "packages.lock.json", "gradle.lockfile",
    }
)  # fmt: skip
# Known binary formats are skipped by name, without reading the blob.
BINARY_EXTENSIONS: frozenset[str] = frozenset(
    {
        "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tif", "tiff", "psd", "icns",
        "pdf", "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "tar", "jar", "war",
        "whl", "egg", "exe", "dll", "so", "dylib", "a", "o", "obj", "lib", "class", "pyc",
        "pyo", "wasm", "bin", "dat", "db", "sqlite", "sqlite3", "ttf", "otf", "woff",
        "woff2", "eot", "mp3", "mp4", "wav", "ogg", "flac", "avi", "mov", "mkv", "webm",
        "doc", "docx", "xls", "xlsx", "ppt", "pptx", "npy", "npz", "pkl", "pt", "onnx",
        "safetensors", "parquet", "iso", "dmg", "deb", "rpm",
    }
)  # fmt: skip
MINIFIED_SUFFIXES: tuple[str, ...] = (".min.js", ".min.mjs", ".min.css", ".js.map", ".css.map")


@dataclass(frozen=True)
class WalkedFile:
    """A file to index: its decoded text and what we know about it."""

    path: str
    sha: str
    size: int
    language: str | None
    is_test: bool
    is_doc: bool
    text: str
    encoding: str = "utf-8"  # "utf-8", "utf-8-sig", "utf-16" or "latin-1"


@dataclass(frozen=True)
class SkippedFile:
    """A path that was not indexed; directories are recorded once, with a trailing "/"."""

    path: str
    reason: str


@dataclass
class WalkResult:
    files: list[WalkedFile] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)

    @property
    def errors(self) -> list[SkippedFile]:
        """Skips caused by failures (a blob that could not be read), not by policy."""
        return [s for s in self.skipped if s.reason.startswith(SKIP_UNREADABLE)]


def _is_unsafe(path: str) -> bool:
    if not path or path.startswith("/") or "\\" in path or "\x00" in path:
        return True
    return any(part in ("", ".", "..") for part in path.split("/"))


def _directory_skip_reason(name: str) -> str | None:
    if name in VENDORED_DIRECTORIES or name.endswith(".egg-info"):
        return SKIP_VENDORED
    if name.startswith(".") and name not in ALLOWED_HIDDEN_DIRECTORIES:
        return SKIP_HIDDEN_DIRECTORY
    return None


class GitignoreRules:
    """The ``.gitignore`` files of one tree, answering "is this path ignored?"."""

    def __init__(self, specs: dict[str, pathspec.GitIgnoreSpec]) -> None:
        # Directory ("" for the root, else "a/b") -> compiled patterns of its .gitignore.
        self._specs = specs
        self._dir_cache: dict[str, bool] = {}

    @classmethod
    def from_files(cls, gitignores: dict[str, str]) -> GitignoreRules:
        """``gitignores`` maps a directory ("" = root) to its .gitignore text."""
        specs = {
            directory: pathspec.GitIgnoreSpec.from_lines(text.splitlines())
            for directory, text in gitignores.items()
        }
        return cls(specs)

    def _decide(self, path: str, is_dir: bool) -> bool:
        parts = path.split("/")
        # Deepest .gitignore first: the first one with a matching pattern decides.
        for depth in range(len(parts) - 1, -1, -1):
            directory = "/".join(parts[:depth])
            spec = self._specs.get(directory)
            if spec is None:
                continue
            relative = "/".join(parts[depth:]) + ("/" if is_dir else "")
            result = spec.check_file(relative)
            if result.include is not None:
                return bool(result.include)
        return False

    def ignored_directory(self, path: str) -> str | None:
        """The outermost ignored directory containing ``path``, or None."""
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            directory = "/".join(parts[:depth])
            if directory not in self._dir_cache:
                self._dir_cache[directory] = self._decide(directory, is_dir=True)
            if self._dir_cache[directory]:
                return directory
        return None

    def is_ignored(self, path: str) -> bool:
        return self.ignored_directory(path) is not None or self._decide(path, is_dir=False)


def decode_text(data: bytes) -> tuple[str, str] | None:
    """Decode a blob as text: ``(text, encoding)``, or None when it is not text."""
    if data.startswith(codecs.BOM_UTF8):
        if b"\x00" in data:
            return None
        try:
            return data[len(codecs.BOM_UTF8) :].decode("utf-8"), "utf-8-sig"
        except UnicodeDecodeError:
            return None
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            return None
        return None if "\x00" in text else (text, "utf-16")
    # A NUL anywhere, not only in the first 8 KB as git looks: PostgreSQL's text cannot hold
    # one (a PDF-based logo whose first NUL came later failed a whole index job).
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    # Legacy 8-bit text (Latin-1 / cp1252 source files) is kept, but bytes that are
    # mostly control characters are binary data that happened to contain no NUL.
    controls = sum(1 for b in data[:BINARY_SNIFF_BYTES] if b < 32 and b not in b"\t\n\r\f\v")
    if controls * 100 > min(len(data), BINARY_SNIFF_BYTES):
        return None
    return data.decode("latin-1"), "latin-1"


def is_binary(data: bytes) -> bool:
    """True when ``data`` looks binary: a NUL byte anywhere in it (UTF-16 aside)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\x00" in data


def _looks_minified(text: str, language: str | None) -> bool:
    if language not in ("javascript", "css") or len(text) < 10_000:
        return False
    lines = text.count("\n") + 1
    return len(text) / lines > 500


def _read_gitignores(entries: list[TreeEntry], read_blob: Callable[[str], bytes]) -> dict[str, str]:
    gitignores: dict[str, str] = {}
    for entry in entries:
        path = entry.path
        if PurePosixPath(path).name != ".gitignore" or _is_unsafe(path):
            continue
        if entry.mode not in (MODE_FILE, MODE_EXECUTABLE) or entry.size > MAX_GITIGNORE_BYTES:
            continue
        directory = path.rsplit("/", 1)[0] if "/" in path else ""
        if any(_directory_skip_reason(p) for p in directory.split("/") if p):
            continue
        try:
            data = read_blob(entry.sha)
        except (KeyError, OSError, ValueError):
            continue
        gitignores[directory] = data.decode("utf-8", "replace")
    return gitignores


def walk_tree(
    entries: Iterable[TreeEntry],
    read_blob: Callable[[str], bytes],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    only_paths: Container[str] | None = None,
) -> WalkResult:
    """Select and decode the files of a tree that should be indexed.

    ``read_blob(sha)`` returns a blob's bytes; it is never called for a symlink, a
    submodule, a skipped directory or a file over ``max_file_bytes``.

    ``only_paths`` is for incremental re-indexing: pass the whole tree (so that every
    ``.gitignore`` still applies) and the paths whose blobs changed; only those are
    considered, read and reported.
    """
    ordered = sorted(entries, key=lambda e: e.path)
    rules = GitignoreRules.from_files(_read_gitignores(ordered, read_blob))
    if only_paths is not None:
        ordered = [entry for entry in ordered if entry.path in only_paths]
    result = WalkResult()
    skipped_dirs: set[str] = set()

    def skip(path: str, reason: str) -> None:
        result.skipped.append(SkippedFile(path, reason))

    for entry in ordered:
        path = entry.path
        if _is_unsafe(path):
            skip(path, SKIP_UNSAFE_PATH)
            continue
        if entry.is_submodule:
            skip(path, SKIP_SUBMODULE)
            continue
        if entry.is_symlink:
            skip(path, SKIP_SYMLINK)
            continue
        if entry.mode not in (MODE_FILE, MODE_EXECUTABLE):
            skip(path, f"unsupported mode {entry.mode:o}")
            continue

        parts = path.split("/")
        dir_reason = None
        for depth, name in enumerate(parts[:-1], start=1):
            dir_reason = _directory_skip_reason(name)
            if dir_reason:
                directory = "/".join(parts[:depth]) + "/"
                if directory not in skipped_dirs:
                    skipped_dirs.add(directory)
                    skip(directory, dir_reason)
                break
        if dir_reason:
            continue

        name = parts[-1]
        if name.startswith(".") and name not in ALLOWED_HIDDEN_FILES:
            skip(path, SKIP_HIDDEN_FILE)
            continue
        ignored_dir = rules.ignored_directory(path)
        if ignored_dir is not None:
            if ignored_dir + "/" not in skipped_dirs:
                skipped_dirs.add(ignored_dir + "/")
                skip(ignored_dir + "/", SKIP_GITIGNORE)
            continue
        if rules.is_ignored(path):
            skip(path, SKIP_GITIGNORE)
            continue
        if name in LOCK_FILES:
            skip(path, SKIP_LOCK_FILE)
            continue
        if name.endswith(MINIFIED_SUFFIXES):
            skip(path, SKIP_MINIFIED)
            continue
        if entry.size > max_file_bytes:
            skip(path, SKIP_TOO_LARGE)
            continue
        if "." in name and name.rsplit(".", 1)[1].lower() in BINARY_EXTENSIONS:
            skip(path, SKIP_BINARY)
            continue

        try:
            data = read_blob(entry.sha)
        except (KeyError, OSError, ValueError) as exc:
            skip(path, f"{SKIP_UNREADABLE}: {type(exc).__name__}")
            continue
        if len(data) > max_file_bytes:  # the tree lied about the size
            skip(path, SKIP_TOO_LARGE)
            continue
        if is_binary(data):
            skip(path, SKIP_BINARY)
            continue
        decoded = decode_text(data)
        if decoded is None:
            skip(path, SKIP_NOT_TEXT)
            continue
        text, encoding = decoded
        language = detect_language(path, data[:256])
        if _looks_minified(text, language):
            skip(path, SKIP_MINIFIED)
            continue
        result.files.append(
            WalkedFile(
                path=path,
                sha=entry.sha,
                size=entry.size,
                language=language,
                is_test=is_test_path(path),
                is_doc=is_doc_path(path, language),
                text=text,
                encoding=encoding,
            )
        )
    return result
