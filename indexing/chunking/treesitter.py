"""Structure-aware chunking of one parsed file.

The file's definitions are collected from the syntax tree (top level, inside namespaces,
inside class bodies), then the whole file is laid out as a sequence of regions:

* a function or method -> one chunk (split at statement boundaries when over budget);
* a class with methods -> a header chunk (the class line(s) and its body up to the first
  method), one chunk per method, and chunks for any class-level code between methods,
  all with the class symbol; inner classes recurse the same way;
* a class without methods (struct, enum, interface...) -> one chunk;
* anything else (imports, module-level statements, namespace lines) -> "module" chunks,
  merged up to the budget and split at top-level statement boundaries.

Comments and attributes directly above a definition (no blank line in between) are part
of it; Python decorators are already inside ``decorated_definition``.  Blank lines at the
edges of a chunk are trimmed, and a gap holding only closing punctuation (``}``, ``};``,
``end``) is appended to the chunk before it instead of becoming a chunk of its own — so
every non-blank line of the file is in exactly one chunk.

Optionally (``inline_tests.MARK_INLINE_TESTS``, ``TEST_BLOCKS``; off, see docs/evaluation.md),
tests inside source files are marked (``ChunkPiece.is_test``): in Rust, an item under
``#[cfg(test)]`` (the usual inline ``mod tests``) and a function under ``#[test]`` /
``#[tokio::test]``. In JavaScript and TypeScript test files (``test_blocks``), ``describe`` /
``it`` / ``test`` blocks are definitions: a ``describe`` block is a class whose members are its
blocks, each named by its description (``buffer.emits batches of input values``), instead of the
file falling into whole-file module chunks.

``calls`` of a chunk are the names called in its lines (``foo()`` -> ``foo``,
``obj.method()`` -> ``method``), found with a tree-sitter query over the whole file.
"""

from __future__ import annotations

import bisect
import re
from collections import deque
from dataclasses import dataclass, field

from tree_sitter import Node

from indexing.chunking import inline_tests
from indexing.chunking.model import (
    KIND_CLASS,
    KIND_FUNCTION,
    KIND_METHOD,
    KIND_MODULE,
    ChunkBudget,
    ChunkPiece,
    SourceLines,
    split_rows,
)
from indexing.chunking.queries import captures, grammar_query
from indexing.chunking.specs import (
    SPECS,
    LanguageSpec,
    body_of,
    definition_name,
    leaf_name,
)

_CALL_NAME = re.compile(r"^[A-Za-z_$][\w$]*[?!]?$")
# Lines that close a block and say nothing: `}`, `};`, `})`, `end`, `}  // namespace x`.
_CLOSING_LINE = re.compile(r"^\s*(?:[\]\)\};,]+\s*(?://.*|#.*|/\*.*)?|end\b\s*(?:#.*)?|\)?;?)\s*$")
_BOUNDARY_DEPTH = 6
# C/C++ specifiers are only definitions when they have a body (not `struct P;`).
_BODY_REQUIRED = frozenset(
    {"struct_specifier", "union_specifier", "enum_specifier", "class_specifier", "type_definition"}
)


@dataclass
class Definition:
    node_start: int  # first row of the definition itself
    start: int  # first row including leading comments and attributes
    end: int
    symbol: str
    kind: str
    node: Node
    children: list[Definition] = field(default_factory=list)


class TreeChunker:
    """Chunks one file from its syntax tree; use ``chunk()`` once."""

    def __init__(
        self,
        lines: SourceLines,
        root: Node,
        grammar: str,
        budget: ChunkBudget,
        *,
        test_blocks: bool = False,
    ) -> None:
        self.lines = lines
        self.root = root
        self.grammar = grammar
        self.spec: LanguageSpec = SPECS[grammar]
        self.budget = budget
        self.test_blocks = (
            test_blocks
            and inline_tests.TEST_BLOCKS
            and grammar in ("javascript", "typescript", "tsx")
        )
        self.pieces: list[list] = []  # [first_row, last_row, symbol, kind]
        self.test_ranges: list[tuple[int, int]] = []  # rows of test-only items
        self._encoded: dict[int, bytes] = {}

    # -- rows ---------------------------------------------------------------------

    def _line_bytes(self, row: int) -> bytes:
        if row not in self._encoded:
            self._encoded[row] = self.lines.lines[row].encode("utf-8", "replace")
        return self._encoded[row]

    def _end_row(self, node: Node) -> int:
        row, column = node.end_point
        if column == 0 and row > node.start_point.row:
            row -= 1  # the node ends with its newline
        return min(row, len(self.lines) - 1)

    def _starts_line(self, node: Node) -> bool:
        row, column = node.start_point
        return row < len(self.lines) and not self._line_bytes(row)[:column].strip()

    def _attachable_rows(self) -> set[int]:
        """Rows holding nothing but comments or attributes."""
        rows: set[int] = set()
        for node in captures(grammar_query(self.grammar, "attachable"), self.root):
            end_row = self._end_row(node)
            end_column = node.end_point.column if end_row == node.end_point.row else None
            if not self._starts_line(node):
                continue
            if end_column is not None and self._line_bytes(end_row)[end_column:].strip():
                continue
            rows.update(range(node.start_point.row, end_row + 1))
        return rows

    # -- definitions ----------------------------------------------------------------

    def _members(self, body: Node) -> list[Node]:
        members: list[Node] = []
        for child in body.named_children:
            if child.type in self.spec.member_groups:
                members.extend(child.named_children)
            else:
                members.append(child)
        return members

    def _unwrap(self, node: Node) -> Node | None:
        for _ in range(4):
            if node.type not in self.spec.wrappers:
                return node
            inner = node.child_by_field_name("definition") or node.child_by_field_name(
                "declaration"
            )
            if inner is None:
                named = [
                    c
                    for c in node.named_children
                    if c.type not in self.spec.attributes and "comment" not in c.type
                ]
                inner = named[-1] if named else None
            if inner is None:
                return None
            node = inner
        return node

    def _collect(self, body: Node, chain: tuple[str, ...]) -> list[Definition]:
        found: list[Definition] = []
        for child in self._members(body):
            found.extend(self._definitions_of(child, chain))
        return found

    def _function_value_name(self, node: Node) -> str | None:
        """``const f = () => {}`` -> ``f``; None for any other declaration."""
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(declarators) != 1:
            return None
        value = declarators[0].child_by_field_name("value")
        if value is None or value.type not in self.spec.function_values:
            return None
        name = declarators[0].child_by_field_name("name")
        return leaf_name(name) if name is not None and name.type == "identifier" else None

    def _test_block(
        self, outer: Node, node: Node, chain: tuple[str, ...]
    ) -> list[Definition] | None:
        """A ``describe('name', () => {...})`` / ``it(...)`` block as a definition, or None."""
        found = inline_tests.test_block(node, self.spec)
        if found is None:
            return None
        name, body = found
        symbol = ".".join((*chain, name))
        children = self._collect(body, (*chain, name)) if body.type == "statement_block" else []
        if not children:
            kind = KIND_METHOD if chain else KIND_FUNCTION
            return [self._make(outer, node, symbol, kind)]
        definition = self._make(outer, node, symbol, KIND_CLASS)
        definition.children = self._normalise(children, node.start_point.row + 1, definition.end)
        return [definition]

    def _definitions_of(self, outer: Node, chain: tuple[str, ...]) -> list[Definition]:
        node = self._unwrap(outer)
        if node is None:
            return []
        spec = self.spec
        if self.grammar == "rust" and inline_tests.MARK_INLINE_TESTS:
            test_start = inline_tests.rust_test_start(outer, spec)
            if test_start is not None:
                self.test_ranges.append((test_start, self._end_row(outer)))
        if self.test_blocks and node.type == "call_expression":
            return self._test_block(outer, node, chain) or []
        kind_of_function = KIND_METHOD if chain else KIND_FUNCTION
        if node.type in spec.namespaces:
            body = body_of(node)
            return self._collect(body, chain) if body is not None else []
        if node.type in spec.functions:
            owner, name = definition_name(node, self.grammar)
            if not name:
                return []
            if owner:
                return [self._make(outer, node, f"{owner}.{name}", KIND_METHOD)]
            return [self._make(outer, node, ".".join((*chain, name)), kind_of_function)]
        if node.type in spec.variable_declarations:
            name = self._function_value_name(node)
            if name:
                return [self._make(outer, node, ".".join((*chain, name)), kind_of_function)]
            return []
        if node.type in spec.field_functions and chain:
            value = node.child_by_field_name("value")
            if value is not None and value.type in spec.function_values:
                name_node = node.child_by_field_name("name") or node.child_by_field_name("property")
                name = leaf_name(name_node)
                if name:
                    return [self._make(outer, node, ".".join((*chain, name)), KIND_METHOD)]
            return []
        if node.type in spec.classes:
            body = body_of(node)
            if body is None and node.type in _BODY_REQUIRED:
                return []
            _, name = definition_name(node, self.grammar)
            if not name:
                return []
            definition = self._make(outer, node, ".".join((*chain, name)), KIND_CLASS)
            if body is not None:
                children = self._collect(body, (*chain, name))
                definition.children = self._normalise(
                    children, node.start_point.row + 1, definition.end
                )
            return [definition]
        return []

    def _make(self, outer: Node, node: Node, symbol: str, kind: str) -> Definition:
        row = outer.start_point.row
        return Definition(row, row, self._end_row(outer), symbol, kind, node)

    def _normalise(self, found: list[Definition], lower: int, upper: int) -> list[Definition]:
        """Order definitions, make them line-disjoint and attach leading comments."""
        result: list[Definition] = []
        for definition in sorted(found, key=lambda d: d.node_start):
            definition.end = min(definition.end, upper)
            floor = result[-1].end + 1 if result else lower
            if definition.node_start < floor:
                # Shares a line with the previous definition (or the class header):
                # it cannot be a chunk of its own, so it stays inside that one.
                if result and definition.node_start <= result[-1].end:
                    result[-1].end = max(result[-1].end, definition.end)
                continue
            start = definition.node_start
            while start - 1 >= floor and start - 1 in self._attachable:
                start -= 1
            definition.start = start
            result.append(definition)
        return result

    # -- layout ---------------------------------------------------------------------

    def _emit(self, first: int, last: int, symbol: str | None, kind: str) -> None:
        trimmed = self.lines.trim(first, last)
        if trimmed is not None:
            self.pieces.append([trimmed[0], trimmed[1], symbol, kind])

    def _boundaries(self, node: Node, first: int, last: int) -> dict[int, int]:
        """Rows in ``first+1..last`` where a descendant of ``node`` starts -> depth."""
        found: dict[int, int] = {}
        queue: deque[tuple[Node, int]] = deque((c, 1) for c in node.named_children)
        while queue:
            current, depth = queue.popleft()
            if current.end_point.row < first or current.start_point.row > last:
                continue
            row = current.start_point.row
            if first < row <= last and row not in found and self._starts_line(current):
                found[row] = depth
            if depth < _BOUNDARY_DEPTH:
                queue.extend((c, depth + 1) for c in current.named_children)
        return found

    def _emit_split(self, first: int, last: int, symbol: str | None, kind: str, node: Node) -> None:
        if self.lines.fits(first, last, self.budget):
            self._emit(first, last, symbol, kind)
            return
        boundaries = self._boundaries(node, first, last)
        for part_first, part_last in split_rows(self.lines, first, last, boundaries, self.budget):
            self._emit(part_first, part_last, symbol, kind)

    def _emit_gap(self, first: int, last: int, symbol: str | None, kind: str, node: Node) -> None:
        trimmed = self.lines.trim(first, last)
        if trimmed is None:
            return
        first, last = trimmed
        rows = range(first, last + 1)
        if self.pieces and all(
            self.lines.is_blank(r) or _CLOSING_LINE.match(self.lines.lines[r]) for r in rows
        ):
            self.pieces[-1][1] = last  # a closing `}` / `end` joins the chunk before it
            return
        self._emit_split(first, last, symbol, kind, node)

    def _emit_region(
        self,
        first: int,
        last: int,
        definitions: list[Definition],
        symbol: str | None,
        kind: str,
        container: Node,
    ) -> None:
        cursor = first
        for definition in definitions:
            if definition.start > cursor:
                self._emit_gap(cursor, definition.start - 1, symbol, kind, container)
            if definition.children:
                self._emit_region(
                    definition.start,
                    definition.end,
                    definition.children,
                    definition.symbol,
                    KIND_CLASS,
                    definition.node,
                )
            else:
                self._emit_split(
                    definition.start,
                    definition.end,
                    definition.symbol,
                    definition.kind,
                    definition.node,
                )
            cursor = definition.end + 1
        if cursor <= last:
            self._emit_gap(cursor, last, symbol, kind, container)

    # -- calls ----------------------------------------------------------------------

    def _call_index(self) -> tuple[list[int], list[str]]:
        calls: list[tuple[int, str]] = []
        for callee in captures(grammar_query(self.grammar, "calls"), self.root):
            name = leaf_name(callee)
            if name and _CALL_NAME.match(name):
                calls.append((callee.end_point.row, name))
        calls.sort()
        return [row for row, _ in calls], [name for _, name in calls]

    def chunk(self) -> list[ChunkPiece]:
        if not self.lines.lines:
            return []
        last_row = len(self.lines) - 1
        self._attachable = self._attachable_rows()
        definitions = self._normalise(self._collect(self.root, ()), 0, last_row)
        self._emit_region(0, last_row, definitions, None, KIND_MODULE, self.root)
        call_rows, call_names = self._call_index()
        tests = self.test_ranges
        pieces: list[ChunkPiece] = []
        for index, (first, last, symbol, kind) in enumerate(self.pieces):
            lo = bisect.bisect_left(call_rows, first)
            hi = bisect.bisect_right(call_rows, last)
            pieces.append(
                ChunkPiece(
                    index=index,
                    start_line=first + 1,
                    end_line=last + 1,
                    symbol=symbol,
                    kind=kind,
                    content=self.lines.content(first, last),
                    calls=tuple(sorted(set(call_names[lo:hi]))),
                    is_test=any(lo_row <= first and last <= hi_row for lo_row, hi_row in tests),
                )
            )
        return pieces
