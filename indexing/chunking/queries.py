"""Tree-sitter queries a chunker runs: call callees, comments and attributes of a grammar,
each pattern checked against the installed grammar version (``indexing.chunking.treesitter``)."""

from __future__ import annotations

from functools import cache

import tree_sitter
from tree_sitter import Node

from indexing.chunking.grammars import load_language
from indexing.chunking.specs import SPECS


@cache
def grammar_query(grammar: str, kind: str) -> tree_sitter.Query | None:
    """A query capturing call callees (``kind="calls"``) or comment/attribute nodes."""
    language = load_language(grammar)
    spec = SPECS.get(grammar)
    if language is None or spec is None:
        return None
    if kind == "calls":
        patterns = list(spec.calls)
    else:
        patterns = [f"({node_type}) @capture" for node_type in (*spec.comments, *spec.attributes)]
    valid = []
    for pattern in patterns:  # a node type or field a grammar version lacks is skipped
        try:
            tree_sitter.Query(language, pattern)
        except (tree_sitter.QueryError, ValueError, NameError):
            continue
        valid.append(pattern)
    return tree_sitter.Query(language, "\n".join(valid)) if valid else None


def captures(query: tree_sitter.Query | None, root: Node) -> list[Node]:
    if query is None:
        return []
    return tree_sitter.QueryCursor(query).captures(root).get("capture", [])
