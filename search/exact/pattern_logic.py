"""Boolean combinations of exact and regex terms: ``"a" OR "b"``, ``NOT "c"`` / ``-"c"``, groups.

The terms are decided per file, as GitHub's and Sourcegraph's code search do: ``"a" "b"`` (or
``"a" AND "b"``) is a file holding both somewhere, ``"a" OR "b"`` one holding either, ``NOT "c"``
one not holding ``c`` anywhere. A file's matching lines are those of the terms that count for it
(``shown_terms``: those not under a NOT); a combination a file could satisfy without any such
term (``NOT "c"`` alone, ``"a" OR NOT "b"``) has nothing to show and is refused by the parser.

``search.exact.candidates.narrowing`` turns an expression into the conditions the candidate
reader requires of a file's chunks: necessary, never sufficient -- the engine decides each
candidate with ``evaluate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

TermKind = Literal["literal", "regex"]


@dataclass(frozen=True)
class Term:
    """A quoted literal or a ``/regex/``, as written (escapes resolved), and where it started."""

    kind: TermKind
    text: str
    position: int


@dataclass(frozen=True)
class TermRef:
    index: int  # into the search's terms


@dataclass(frozen=True)
class Not:
    child: Expr


@dataclass(frozen=True)
class AllOf:
    children: tuple[Expr, ...]


@dataclass(frozen=True)
class AnyOf:
    children: tuple[Expr, ...]


Expr = TermRef | Not | AllOf | AnyOf


def evaluate(expr: Expr, present: Sequence[bool]) -> bool:
    """Whether a file in which term ``i`` occurs exactly when ``present[i]`` matches."""
    if isinstance(expr, TermRef):
        return present[expr.index]
    if isinstance(expr, Not):
        return not evaluate(expr.child, present)
    if isinstance(expr, AllOf):
        return all(evaluate(child, present) for child in expr.children)
    return any(evaluate(child, present) for child in expr.children)


def matches_without_terms(expr: Expr, count: int) -> bool:
    """True when a file holding none of the ``count`` terms matches (nothing to show)."""
    return evaluate(expr, [False] * count)


def shown_terms(expr: Expr, negated: bool = False) -> set[int]:
    """The terms under an even number of NOTs: the ones whose lines a matching file shows."""
    if isinstance(expr, TermRef):
        return set() if negated else {expr.index}
    if isinstance(expr, Not):
        return shown_terms(expr.child, not negated)
    found: set[int] = set()
    for child in expr.children:
        found |= shown_terms(child, negated)
    return found


def describe(expr: Expr) -> str:
    """A canonical text of the expression's shape (``(t0 OR t1) NOT t2``): part of the cursor's
    fingerprint, so a page of one combination never continues another."""
    if isinstance(expr, TermRef):
        return f"t{expr.index}"
    if isinstance(expr, Not):
        return f"NOT {describe(expr.child)}"
    joiner = " " if isinstance(expr, AllOf) else " OR "
    return "(" + joiner.join(describe(child) for child in expr.children) + ")"
