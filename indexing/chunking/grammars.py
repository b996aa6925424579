"""Tree-sitter grammars from the per-language wheels, loaded once per process.

Grammars come only from the installed ``tree-sitter-<language>`` wheels; nothing is ever
downloaded at run time.  A grammar whose wheel is missing simply makes its language fall
back to line windows.
"""

from __future__ import annotations

import importlib
import threading
from functools import cache

import tree_sitter

# Grammar key -> (module, function returning the language pointer).
_GRAMMAR_SOURCES: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
}

# Language ids (see indexing.languages) parsed with another language's grammar.
_GRAMMAR_ALIASES: dict[str, str] = {"cuda": "cpp", "objective-cpp": "cpp"}

_local = threading.local()


def grammar_for(language: str | None, path: str = "") -> str | None:
    """The grammar key used to parse a file, or None when there is no grammar.

    ``.h`` headers are detected as C but parsed with the C++ grammar, which also reads
    plain C declarations, because most headers in mixed projects contain C++ classes.
    """
    if language is None:
        return None
    if language == "c" and path.endswith(".h"):
        return "cpp"
    language = _GRAMMAR_ALIASES.get(language, language)
    return language if language in _GRAMMAR_SOURCES else None


@cache
def load_language(grammar: str) -> tree_sitter.Language | None:
    """The tree-sitter ``Language`` of a grammar key, or None if its wheel is missing."""
    source = _GRAMMAR_SOURCES.get(grammar)
    if source is None:
        return None
    module_name, function_name = source
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return tree_sitter.Language(getattr(module, function_name)())


def get_parser(grammar: str) -> tree_sitter.Parser | None:
    """A parser for ``grammar``; one per thread (parsers are not thread-safe)."""
    parsers: dict[str, tree_sitter.Parser] = _local.__dict__.setdefault("parsers", {})
    parser = parsers.get(grammar)
    if parser is None:
        language = load_language(grammar)
        if language is None:
            return None
        parser = tree_sitter.Parser(language)
        parsers[grammar] = parser
    return parser


def available_grammars() -> list[str]:
    """Grammar keys whose wheels are installed."""
    return [key for key in _GRAMMAR_SOURCES if load_language(key) is not None]
