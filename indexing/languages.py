"""Language detection and file classification for the indexing walker.

Everything here is table-driven and pure: a path (and optionally the first bytes of the
file, for shebangs) goes in, a stable lowercase language id comes out.  The same ids are
stored on every file and chunk and used by the search filters, so never rename one.

Detection order: exact file name (``Makefile``, ``Dockerfile``, ``CMakeLists.txt``...),
then file-name patterns (``Dockerfile.prod``), then the extension, then the shebang of
the first line (``#!/usr/bin/env python3``).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

# fmt: off
# Extension (lowercase, without the dot) -> language id.
EXTENSIONS: dict[str, str] = {
    # Python
    "py": "python", "pyi": "python", "pyw": "python", "pyx": "cython", "pxd": "cython",
    # JavaScript / TypeScript
    "js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript", "tsx": "tsx",
    "coffee": "coffeescript",
    # Systems
    "go": "go", "rs": "rust", "zig": "zig", "nim": "nim", "d": "d", "v": "verilog",
    "c": "c", "h": "c",
    "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "c++": "cpp", "hpp": "cpp", "hh": "cpp",
    "hxx": "cpp", "h++": "cpp", "ipp": "cpp", "inl": "cpp", "tpp": "cpp", "cu": "cuda",
    "cuh": "cuda", "m": "objective-c", "mm": "objective-cpp",
    "s": "assembly", "asm": "assembly", "nasm": "assembly",
    # JVM / .NET
    "java": "java", "kt": "kotlin", "kts": "kotlin", "scala": "scala", "sc": "scala",
    "groovy": "groovy", "gradle": "groovy", "clj": "clojure", "cljs": "clojure",
    "cljc": "clojure", "edn": "clojure",
    "cs": "csharp", "csx": "csharp", "fs": "fsharp", "fsi": "fsharp", "fsx": "fsharp",
    "vb": "vbnet",
    # Scripting
    "rb": "ruby", "rake": "ruby", "gemspec": "ruby", "ru": "ruby",
    "php": "php", "phtml": "php",
    "pl": "perl", "pm": "perl", "t": "perl", "lua": "lua", "r": "r", "jl": "julia",
    "sh": "shell", "bash": "shell", "zsh": "shell", "ksh": "shell", "fish": "fish",
    "ps1": "powershell", "psm1": "powershell", "psd1": "powershell",
    "bat": "batch", "cmd": "batch", "awk": "awk", "tcl": "tcl", "vim": "vim",
    # Functional
    "hs": "haskell", "lhs": "haskell", "ml": "ocaml", "mli": "ocaml", "elm": "elm",
    "ex": "elixir", "exs": "elixir", "erl": "erlang", "hrl": "erlang",
    "lisp": "lisp", "lsp": "lisp", "el": "emacs-lisp", "scm": "scheme", "ss": "scheme",
    "rkt": "racket", "purs": "purescript", "cr": "crystal",
    # Mobile / other general purpose
    "swift": "swift", "dart": "dart", "sol": "solidity", "f90": "fortran",
    "f95": "fortran", "f03": "fortran", "f": "fortran", "for": "fortran",
    "pas": "pascal", "pp": "pascal", "adb": "ada", "ads": "ada", "cob": "cobol",
    "cbl": "cobol", "pro": "prolog", "vhd": "vhdl", "vhdl": "vhdl", "sv": "systemverilog",
    # Web
    "html": "html", "htm": "html", "xhtml": "html", "css": "css", "scss": "scss",
    "sass": "sass", "less": "less", "vue": "vue", "svelte": "svelte", "astro": "astro",
    "erb": "erb", "ejs": "ejs", "hbs": "handlebars", "handlebars": "handlebars",
    "mustache": "handlebars", "jinja": "jinja", "jinja2": "jinja", "j2": "jinja",
    "twig": "twig", "haml": "haml", "pug": "pug", "liquid": "liquid",
    # Data / config
    "json": "json", "jsonc": "json", "json5": "json", "geojson": "json",
    "yaml": "yaml", "yml": "yaml", "toml": "toml", "ini": "ini", "cfg": "ini",
    "conf": "ini", "properties": "properties", "env": "dotenv", "xml": "xml",
    "xsd": "xml", "xsl": "xml", "xslt": "xml", "plist": "xml", "csproj": "xml",
    "fsproj": "xml", "vbproj": "xml", "props": "xml", "targets": "xml", "svg": "xml",
    "csv": "csv", "tsv": "csv", "sql": "sql", "graphql": "graphql", "gql": "graphql",
    "proto": "protobuf", "thrift": "thrift", "avsc": "json", "tf": "terraform",
    "tfvars": "terraform", "hcl": "hcl", "nix": "nix", "bzl": "starlark",
    "star": "starlark", "cmake": "cmake", "mk": "makefile", "mak": "makefile",
    "dockerfile": "dockerfile", "diff": "diff", "patch": "diff",
    # Prose
    "md": "markdown", "markdown": "markdown", "mdx": "markdown", "rst": "rst",
    "adoc": "asciidoc", "asciidoc": "asciidoc", "txt": "text", "text": "text",
    "org": "org", "tex": "latex", "sty": "latex", "bib": "bibtex", "ipynb": "jupyter",
}

# Exact file names (case-sensitive, as tools expect them) -> language id.
FILENAMES: dict[str, str] = {
    "Makefile": "makefile", "makefile": "makefile", "GNUmakefile": "makefile",
    "Dockerfile": "dockerfile", "Containerfile": "dockerfile",
    "CMakeLists.txt": "cmake",
    "Gemfile": "ruby", "Rakefile": "ruby", "Guardfile": "ruby", "Podfile": "ruby",
    "Vagrantfile": "ruby", "Brewfile": "ruby", "Capfile": "ruby", "Fastfile": "ruby",
    "Appfile": "ruby", "Berksfile": "ruby", "Dangerfile": "ruby", "config.ru": "ruby",
    "Jenkinsfile": "groovy",
    "BUILD": "starlark", "BUILD.bazel": "starlark", "WORKSPACE": "starlark",
    "WORKSPACE.bazel": "starlark", "MODULE.bazel": "starlark", "Tiltfile": "starlark",
    "Pipfile": "toml", "Cargo.lock": "toml", "poetry.lock": "toml",
    "go.mod": "gomod", "go.sum": "gomod", "go.work": "gomod",
    "Procfile": "text", "CODEOWNERS": "text", "README": "text", "LICENSE": "text",
    "LICENCE": "text", "COPYING": "text", "NOTICE": "text", "AUTHORS": "text",
    "CONTRIBUTORS": "text", "CHANGES": "text", "CHANGELOG": "text", "HISTORY": "text",
    "VERSION": "text", "MANIFEST.in": "text", "requirements.txt": "text",
    ".gitignore": "gitignore", ".dockerignore": "gitignore", ".npmignore": "gitignore",
    ".gitattributes": "gitattributes", ".editorconfig": "ini", ".env": "dotenv",
    ".bashrc": "shell", ".bash_profile": "shell", ".zshrc": "shell", ".profile": "shell",
    "PKGBUILD": "shell", "APKBUILD": "shell",
    "yarn.lock": "text", "Gemfile.lock": "text",
}

# Name patterns tried after exact names and before extensions: (regex, language).
FILENAME_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(Dockerfile|Containerfile)[.-].+$"), "dockerfile"),
    (re.compile(r"^.+\.(Dockerfile|dockerfile)$"), "dockerfile"),
    (re.compile(r"^(Makefile|makefile)\..+$"), "makefile"),
    (re.compile(r"^\.env\..+$"), "dotenv"),
    (re.compile(r"^requirements[\w.-]*\.(txt|in)$"), "text"),
)

# Interpreter named by a shebang (version suffix removed) -> language id.
INTERPRETERS: dict[str, str] = {
    "python": "python", "pypy": "python", "jython": "python",
    "node": "javascript", "nodejs": "javascript", "bun": "javascript",
    "deno": "typescript", "ts-node": "typescript", "tsx": "typescript",
    "sh": "shell", "bash": "shell", "zsh": "shell", "ksh": "shell", "dash": "shell",
    "ash": "shell", "mksh": "shell", "fish": "fish",
    "ruby": "ruby", "jruby": "ruby", "perl": "perl", "php": "php", "lua": "lua",
    "luajit": "lua", "rscript": "r", "julia": "julia", "tclsh": "tcl", "wish": "tcl",
    "awk": "awk", "gawk": "awk", "mawk": "awk", "elixir": "elixir", "escript": "erlang",
    "swift": "swift", "runghc": "haskell", "runhaskell": "haskell", "stack": "haskell",
    "pwsh": "powershell", "powershell": "powershell", "groovy": "groovy",
    "scala": "scala", "kotlin": "kotlin", "make": "makefile", "guile": "scheme",
    "racket": "racket", "sbcl": "lisp", "clojure": "clojure", "crystal": "crystal",
    "dart": "dart",
}

# Languages whose files are prose, configuration or data rather than program code.
DOC_LANGUAGES: frozenset[str] = frozenset(
    {
        "markdown", "rst", "asciidoc", "text", "org", "latex", "bibtex",
        "json", "yaml", "toml", "ini", "properties", "dotenv", "xml", "csv",
        "gitignore", "gitattributes", "gomod", "jupyter", "diff",
    }
)

DOC_DIRECTORIES: frozenset[str] = frozenset({"docs", "doc", "documentation", "man", "manual"})

# Base names (without extension, case-insensitive) of project prose files.
DOC_BASENAMES: frozenset[str] = frozenset(
    {
        "readme", "license", "licence", "copying", "notice", "authors", "contributors",
        "changelog", "changes", "history", "news", "contributing", "code_of_conduct",
        "security", "support", "maintainers", "codeowners", "todo",
    }
)

TEST_DIRECTORIES: frozenset[str] = frozenset(
    {"test", "tests", "__tests__", "__test__", "spec", "specs", "testdata", "test_data",
     "testing", "e2e", "__mocks__", "__snapshots__", "testsuite", "unittests"}
)

TEST_FILE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"^tests?_.+\.\w+$"),  # test_models.py, tests_utils.py
    re.compile(r"^.+[._-](test|tests|spec|specs)\.\w+$"),  # foo_test.go, a.spec.ts
    re.compile(r"^tests?\.\w+$"),  # tests.py (Django), test.js
    re.compile(r"^conftest\.py$"),
    re.compile(r"^.*[a-z0-9]Tests?\.(java|kt|kts|scala|groovy|cs|php|swift|m|mm)$"),
    re.compile(r"^.*[a-z0-9](Spec|IT)\.(java|kt|scala|groovy)$"),  # FooSpec, FooIT
)

# fmt: on

_SHEBANG_VERSION = re.compile(r"[\d.]+$")


def _extension_language(name: str) -> str | None:
    if "." not in name.lstrip("."):
        return None
    ext = name.rsplit(".", 1)[1].lower()
    return EXTENSIONS.get(ext)


def language_from_shebang(head: bytes | None) -> str | None:
    """Return the language named by a ``#!`` first line, or None."""
    if not head or not head.startswith(b"#!"):
        return None
    first_line = head[2:].split(b"\n", 1)[0][:256].decode("utf-8", "replace").strip()
    words = first_line.split()
    if not words:
        return None
    interpreter = words[0].rsplit("/", 1)[-1]
    if interpreter == "env":
        # `#!/usr/bin/env -S python3 -u` or `#!/usr/bin/env VAR=1 node`
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if not rest:
            return None
        interpreter = rest[0].rsplit("/", 1)[-1]
    interpreter = interpreter.lower()
    if interpreter in INTERPRETERS:
        return INTERPRETERS[interpreter]
    return INTERPRETERS.get(_SHEBANG_VERSION.sub("", interpreter).rstrip("-"))


def detect_language(path: str, head: bytes | None = None) -> str | None:
    """Return the language id of ``path`` (a POSIX path), or None when unknown.

    ``head`` is the start of the file; it is only consulted for a shebang when neither
    the name nor the extension decides.
    """
    name = PurePosixPath(path).name
    if name in FILENAMES:
        return FILENAMES[name]
    for pattern, language in FILENAME_PATTERNS:
        if pattern.match(name):
            return language
    by_extension = _extension_language(name)
    if by_extension is not None:
        return by_extension
    return language_from_shebang(head)


def is_test_path(path: str) -> bool:
    """True for files that are tests or test support (fixtures dirs, conftest...)."""
    parts = PurePosixPath(path).parts
    if not parts:
        return False
    if any(part.lower() in TEST_DIRECTORIES for part in parts[:-1]):
        return True
    name = parts[-1]
    return any(pattern.match(name) for pattern in TEST_FILE_PATTERNS)


def is_doc_path(path: str, language: str | None) -> bool:
    """True for documentation, prose, configuration and data files."""
    parts = PurePosixPath(path).parts
    if not parts:
        return False
    if any(part.lower() in DOC_DIRECTORIES for part in parts[:-1]):
        return True
    if language in DOC_LANGUAGES:
        return True
    stem = parts[-1].split(".", 1)[0].lower()
    return stem in DOC_BASENAMES
