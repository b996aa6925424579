"""The query language's boolean syntax: which parentheses and ``-`` group or negate patterns,
the checks on ``OR`` / ``AND`` / ``NOT``, and the parser of the expression they form
(``search.exact.pattern_logic``). ``search.exact.query_language`` calls these on the items of
one query (``Item``: its tokens classified, filters applied, patterns with their terms).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from search.exact.errors import QueryRejected
from search.exact.pattern_logic import AllOf, AnyOf, Expr, Not, Term, TermRef
from search.exact.query_scanner import Token

OPERATORS = ("OR", "AND", "NOT")
ItemKind = Literal["pattern", "plain", "word", "filter", "op", "neg", "lparen", "rparen"]


def rejected_at(code: str, message: str, text: str, token: Token, **details: Any) -> QueryRejected:
    """An error at ``token``; a ``replacement`` detail becomes the whole ``suggested_query``."""
    replacement = details.pop("replacement", None)
    if replacement is not None:
        details["suggested_query"] = text[: token.start] + replacement + text[token.end :]
    return QueryRejected(code, message, {"position": token.start, **details})


def resolve_syntax(text: str, tokens: list[Token], kinds: list[ItemKind]) -> set[int]:
    """The indexes of parentheses and ``-`` that are text: a group is one when it holds only
    patterns, operators and filters (and at least one pattern), a ``-`` when a pattern or a
    group follows. An unpaired parenthesis touching a pattern is an error."""
    as_text: set[int] = set()
    stack: list[int] = []
    pairs: list[tuple[int, int]] = []
    unpaired: list[int] = []
    for index, kind in enumerate(kinds):
        if kind == "lparen":
            stack.append(index)
        elif kind == "rparen":
            (pairs.append((stack.pop(), index)) if stack else unpaired.append(index))
    unpaired += stack
    real: dict[int, int] = {}
    for opening, closing in pairs:  # inner groups close first
        index, has_pattern, only_syntax = opening + 1, False, True
        while index < closing:
            if index in real:
                has_pattern, index = True, real[index] + 1
                continue
            if kinds[index] in ("pattern", "plain"):
                has_pattern = True
            elif kinds[index] not in ("op", "neg", "filter"):
                only_syntax = False
            index += 1
        if has_pattern and only_syntax:
            real[opening] = closing
        else:
            as_text |= {opening, closing}
    for index in unpaired:
        token = tokens[index]
        after = index + 1 < len(tokens) and tokens[index + 1].start == token.end
        before = index > 0 and tokens[index - 1].end == token.start
        if (kinds[index] == "lparen" and after and kinds[index + 1] == "pattern") or (
            kinds[index] == "rparen" and before and kinds[index - 1] == "pattern"
        ):
            raise rejected_at(
                "unbalanced_parenthesis",
                f"unbalanced parenthesis at position {token.start}: a group of patterns"
                ' needs both ( and ) -- ("a" OR "b")',
                text,
                token,
            )
        as_text.add(index)
    for index, kind in enumerate(kinds):
        if kind == "neg":
            following = index + 1 < len(kinds) and (
                kinds[index + 1] in ("pattern", "plain") or index + 1 in real
            )
            if not following:
                as_text.add(index)
    return as_text


@dataclass
class Item:
    kind: ItemKind
    token: Token
    term: Term | None = None  # a pattern's
    depth: int = 0


def source(text: str, item: Item) -> str:
    return text[item.token.start : item.token.end]


def starts_operand(item: Item | None) -> bool:
    return item is not None and (
        item.kind in ("pattern", "neg", "lparen")
        or (item.kind == "op" and item.token.text == "NOT")
    )


def check_operators(items: list[Item], text: str) -> None:
    """Every operator has a term (or group) on each side it combines; one beside a plain word
    is refused with the quoted form to write."""
    for index, item in enumerate(items):
        if item.kind != "op":
            continue
        before = items[index - 1] if index else None
        after = items[index + 1] if index + 1 < len(items) else None
        words = [n for n in (before, after) if n is not None and n.kind == "word"]
        binary = item.token.text != "NOT"
        if words and (binary or after in words):
            parts = [n for n in (before if binary else None, item, after) if n is not None]
            quoted = " ".join(
                f'"{source(text, n)}"' if n.kind == "word" else source(text, n) for n in parts
            )
            start, end = parts[0].token.start, parts[-1].token.end
            # The query with them quoted, when no other word is left (an exact search refuses
            # the words of a question beside its terms).
            whole = text[:start] + quoted + text[end:]
            alone = all(n in parts for n in items if n.kind == "word") and not any(
                set(source(text, n)) & set('()"') for n in parts if n.kind == "word"
            )  # "(timeout" quoted would search for the parenthesis
            raise QueryRejected(
                "unsupported_combination",
                f'{item.token.text} at position {item.token.start} combines "quoted text" and'
                f" /regex/ terms (an exact search), not the words of a question: write {quoted}"
                f" -- or, to search for the word, write it in lower case"
                f" ({item.token.text.lower()}) or quote it",
                {
                    "position": item.token.start,
                    "operator": item.token.text,
                    "example": quoted,
                }
                | ({"suggested_query": whole} if alone else {}),
            )
        if binary and (before is None or before.kind not in ("pattern", "rparen")):
            side = "before"
        elif not starts_operand(after):
            side = "after"
        else:
            continue
        raise QueryRejected(
            "invalid_expression",
            f'{item.token.text} at position {item.token.start} needs a "quoted" or /regex/'
            f" term (or a group) {side} it",
            {"position": item.token.start, "operator": item.token.text},
        )


class ExpressionParser:
    """``or := and (OR and)*``, ``and := unary ([AND] unary)*``, ``unary := (NOT|-) unary |
    term | ( or )`` over items already checked by ``_check_operators``."""

    def __init__(self, items: list[Item], terms: dict[int, int]) -> None:
        self.items, self.terms, self.at = items, terms, 0

    def _peek(self) -> Item | None:
        return self.items[self.at] if self.at < len(self.items) else None

    def parse(self) -> Expr:
        return self._or()

    def _or(self) -> Expr:
        branches = [self._and()]
        while (item := self._peek()) is not None and item.kind == "op" and item.token.text == "OR":
            self.at += 1
            branches.append(self._and())
        return branches[0] if len(branches) == 1 else AnyOf(tuple(branches))

    def _and(self) -> Expr:
        parts = [self._unary()]
        while (item := self._peek()) is not None:
            if item.kind == "op" and item.token.text == "AND":
                self.at += 1
            elif not starts_operand(item):
                break
            parts.append(self._unary())
        return parts[0] if len(parts) == 1 else AllOf(tuple(parts))

    def _unary(self) -> Expr:
        item = self._peek()
        assert item is not None
        self.at += 1
        if item.kind == "neg" or item.kind == "op":  # NOT (checked: the only unary operator)
            return Not(self._unary())
        if item.kind == "lparen":
            inner = self._or()
            self.at += 1  # its ")" (the groups were paired)
            return inner
        return TermRef(self.terms[id(item)])
