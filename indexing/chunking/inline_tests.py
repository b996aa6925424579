"""Tests written inside files, recognised in the syntax tree (both opt-in, see treesitter.py).

- Rust: an item under ``#[cfg(test)]`` (``cfg(all(test, ...))`` too, not ``cfg(not(test))``) or a
  function under ``#[test]`` / ``#[tokio::test]`` is test code (``rust_test_start``).
- JavaScript / TypeScript test files: ``describe('name', () => {...})``, ``it(...)``,
  ``test.each(table)('name', fn)`` and the like are blocks named by their description
  (``test_block``), which the chunker turns into definitions.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from indexing.chunking.specs import LanguageSpec, node_text

# Both measured on the split and left off (docs/evaluation.md, "Tests inside files"): no gain
# outside the noise on either half. The chunk-level flag reaches the store when it is on.
MARK_INLINE_TESTS = False
TEST_BLOCKS = False

_RUST_TEST_ATTRIBUTE = re.compile(r"^(?:cfg\s*\((?:all\s*\()?\s*test\b|(?:\w+::)*test\s*$)")
_TEST_CALLS = frozenset(
    {"describe", "it", "test", "context", "suite", "specify", "fdescribe", "xdescribe",
     "fit", "xit", "bench"}
)  # fmt: skip
_TEST_NAME_CHARS = 200


def rust_test_start(node: Node, spec: LanguageSpec) -> int | None:
    """The first row of the attributes that make ``node`` test-only, or None."""
    first: int | None = None
    sibling = node.prev_named_sibling
    while sibling is not None and (
        sibling.type == "attribute_item" or sibling.type in spec.comments
    ):
        if sibling.type == "attribute_item":
            attribute = next((c for c in sibling.named_children if c.type == "attribute"), None)
            if _RUST_TEST_ATTRIBUTE.match(node_text(attribute).strip()):
                first = sibling.start_point.row
        sibling = sibling.prev_named_sibling
    return first


def test_block(node: Node, spec: LanguageSpec) -> tuple[str, Node] | None:
    """(description, body) of a ``describe`` / ``it`` / ``test`` call, or None."""
    root = node.child_by_field_name("function")
    for _ in range(6):  # describe.each(table)(...), it.only, test.concurrent.skip
        if root is None or root.type == "identifier":
            break
        root = root.child_by_field_name("function" if root.type == "call_expression" else "object")
    if root is None or root.type != "identifier" or node_text(root) not in _TEST_CALLS:
        return None
    arguments = node.child_by_field_name("arguments")
    named = arguments.named_children if arguments is not None else []
    if len(named) < 2 or named[0].type not in ("string", "template_string"):
        return None
    body_owner = next((a for a in named[1:] if a.type in spec.function_values), None)
    body = body_owner.child_by_field_name("body") if body_owner is not None else None
    name = " ".join(node_text(named[0]).strip("'\"`").split())[:_TEST_NAME_CHARS]
    if body is None or not name:
        return None
    return name, body
