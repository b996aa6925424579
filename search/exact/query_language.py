"""The query language of the search box, ``POST /api/search`` and the MCP tools, parsed here only.

Syntax (everything else is ordinary text)::

    repo:NAME   -repo:NAME     repository name, glob or unique prefix; several are OR-ed
    lang:NAME   -lang:NAME     language (``lang:python``; also ``language:``), checked
    file:GLOB   -file:GLOB     path glob, also ``path:`` (``file:src/**/*.py``, ``-file:*_test.go``)
    case:yes|no                case-sensitive matching (exact, regex and file-name search)
    branch:NAME                a repository's indexed branch
    sym:NAME                   definitions named NAME (also ``symbol:``)
    type:symbol|file|semantic  what to search
    content:TEXT               the same as "TEXT" (``content:"a b"``, ``-content:x``)
    "quoted literal"           exact text; ``\\"`` and ``\\\\`` inside it
    /regex/                    a regular expression (RE2 syntax); ``\\/`` inside it
    OR  AND  NOT  -  ( )       combine quoted literals and regexes (per file)

The vocabulary (filters, aliases, the other hosts' filters that are refused, language names) is
``search.exact.query_filters``; the tokens are ``search.exact.query_scanner``'s; the boolean
expression is ``search.exact.pattern_logic``'s; how filters are written (as the query spells
them, or a name with no value) is ``search.exact.filter_words``'.

A filter is a known prefix at the start of a word followed directly by its value; a regex is a
whole word that starts with ``/`` + a non-space and ends with a non-space + ``/``. So "HTTP_PROXY /
HTTPS_PROXY", "what does note: mean", "/usr/bin/env" and "http://x" are plain text. A ``/.../``
word with no regex metacharacter among other free words ("why does /about/ redirect") is a URL
path in a question, plain text too; on its own (``/about/``) or beside an operator it is a regex.
Parentheses group only patterns and operators (``("a" OR "b") -"c"``); around words they are
text. ``OR``, ``AND`` and ``NOT`` (upper case) are operators: between words they are refused
with the quoted form to write instead -- they must not silently become words of a question.

Refused, naming what and where: a prefix one edit away from a filter (``rpo:x``), another host's
filter (``org:x``), an unknown language (``lang:pyton``, with the nearest), an unbalanced quote
or parenthesis, an operator without its terms, a combination that only leaves files out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from search.exact.errors import QueryRejected
from search.exact.filter_words import BareFilter, bare_filters, filter_parts
from search.exact.pattern_logic import Expr, Term, matches_without_terms
from search.exact.query_filters import (
    FILTER_NAMES,
    FOREIGN_FILTERS,
    NEGATABLE,
    TYPE_ALIASES,
    TYPES,
    canonical_filter,
    closest_languages,
    near_filter,
    normalize_language,
)
from search.exact.query_scanner import Token, merge_text, read_regex, scan
from search.exact.query_syntax import (
    OPERATORS,
    ExpressionParser,
    Item,
    ItemKind,
    check_operators,
    rejected_at,
    resolve_syntax,
    source,
)

MAX_FILTERS = 50
MAX_PATTERNS = 10
MAX_VALUE_CHARS = 300


@dataclass
class SearchQuery:
    """A parsed query. ``has_syntax`` is False for plain text: that goes to hybrid search as is.

    ``expression`` is the boolean combination of ``terms`` (None: every term is required, as
    with no operator)."""

    text: str
    words: list[str] = field(default_factory=list)
    terms: list[Term] = field(default_factory=list)
    repos: list[str] = field(default_factory=list)
    exclude_repos: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    exclude_languages: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    exclude_files: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    case_sensitive: bool | None = None
    type: str | None = None
    filter_count: int = 0
    expression: Expr | None = None
    # Filter names written with nothing after the colon (``file: src/``): searched as words.
    bare_filters: list[BareFilter] = field(default_factory=list)

    @property
    def has_syntax(self) -> bool:
        return bool(self.filter_count or self.terms)

    @property
    def free_text(self) -> str:
        """The plain words, in order, one space apart."""
        return " ".join(self.words)

    @property
    def has_regex(self) -> bool:
        return any(t.kind == "regex" for t in self.terms)


def _kind(token: Token) -> ItemKind:
    if token.kind != "word":
        if token.kind in ("quote", "regex"):
            return "plain" if token.plain else "pattern"
        return token.kind  # type: ignore[return-value]
    if token.text in OPERATORS:
        return "op"
    parts = filter_parts(token)
    if parts is None:
        return "word"
    return "pattern" if canonical_filter(parts[1]) == "content" else "filter"


def _apply_filter(query: SearchQuery, item: Item, text: str) -> Term | None:
    """Apply a filter word; ``content:`` gives its term instead. Refuses what it cannot apply."""
    token = item.token
    parts = filter_parts(token)
    assert parts is not None
    negated, name, value = parts
    lowered = name.lower()
    sign = "-" if negated else ""
    canonical = canonical_filter(lowered)
    where = {"filter": f"{sign}{name}:", "filters": [f"{n}:" for n in FILTER_NAMES]}
    if canonical is None and lowered in FOREIGN_FILTERS:
        raise rejected_at(
            "unsupported_filter",
            f"'{name}:' at position {token.start} is another code host's filter; reposearch has"
            f" no {name}: -- use {FOREIGN_FILTERS[lowered]}",
            text,
            token,
            instead=FOREIGN_FILTERS[lowered],
            **where,
        )
    if canonical is None:
        suggestion = near_filter(lowered)
        raise rejected_at(
            "unknown_filter",
            f"unknown filter '{name}:' at position {token.start} — did you mean {suggestion}:?"
            f" (filters: {' '.join(where['filters'])})",
            text,
            token,
            suggestion=f"{suggestion}:",
            replacement=token.text.replace(name, str(suggestion), 1),
            **where,
        )
    if item.depth and canonical != "content":
        raise rejected_at(
            "invalid_expression",
            f"'{name}:' at position {token.start} is inside parentheses: filters apply to the"
            " whole query, so write them outside the groups",
            text,
            token,
            **where,
        )
    if negated and canonical not in NEGATABLE:
        raise rejected_at("invalid_filter", f"'-{name}:' cannot be negated", text, token, **where)
    if len(value) > MAX_VALUE_CHARS:
        raise rejected_at(
            "invalid_filter", f"'{name}:' value over {MAX_VALUE_CHARS} characters", text, token
        )
    query.filter_count += 1
    if query.filter_count > MAX_FILTERS:
        raise rejected_at("too_many_filters", f"at most {MAX_FILTERS} filters", text, token)
    if canonical == "case":
        if value.lower() not in ("yes", "no"):
            raise rejected_at(
                "invalid_filter",
                f"case:{value} at position {token.start}: use case:yes or case:no",
                text,
                token,
                **where,
            )
        query.case_sensitive = value.lower() == "yes"
    elif canonical == "type":
        kind = TYPE_ALIASES.get(value.lower(), value.lower())
        if kind not in TYPES:
            raise rejected_at(
                "invalid_filter",
                f"type:{value} at position {token.start}: use type:{'|'.join(TYPES)}",
                text,
                token,
                **where,
            )
        query.type = kind
    elif canonical == "repo":
        (query.exclude_repos if negated else query.repos).append(value)
    elif canonical == "lang":
        language = normalize_language(value)
        if language is None:
            nearest = closest_languages(value)
            hint = f" — did you mean {nearest[0]}?" if nearest else ""
            raise rejected_at(
                "unknown_language",
                f"unknown language '{value}' ({sign}{name}:{value} at position {token.start}){hint}"
                " (languages are named as the indexer names them: python, javascript, go, cpp)",
                text,
                token,
                filter=f"{sign}{name}:",
                value=value,
                suggestions=nearest,
                **(
                    {"suggestion": nearest[0], "replacement": f"{sign}{name}:{nearest[0]}"}
                    if nearest
                    else {}
                ),
            )
        (query.exclude_languages if negated else query.languages).append(language)
    elif canonical == "file":
        (query.exclude_files if negated else query.files).append(value)
    elif canonical == "branch":
        query.branches.append(value)
    elif canonical == "sym":
        query.symbols.append(value)
    elif canonical == "content":
        regex = read_regex(value, 0) if token.value is None and value[:1] == "/" else None
        if regex is not None and regex[1] == len(value):
            return Term("regex", regex[0], token.start)
        return Term("literal", value, token.start)
    return None


def _check_term(query: SearchQuery, term: Term) -> None:
    if not term.text:
        what = "quoted literal" if term.kind == "literal" else "regex"
        raise QueryRejected(
            "empty_pattern",
            f"empty {what} at position {term.position}",
            {"position": term.position},
        )
    if "\x00" in term.text:
        raise QueryRejected(
            "invalid_pattern", "a pattern cannot contain a NUL byte", {"position": term.position}
        )
    if len(query.terms) >= MAX_PATTERNS:
        raise QueryRejected(
            "too_many_patterns", f"at most {MAX_PATTERNS} patterns", {"position": term.position}
        )


def _items(text: str, query: SearchQuery) -> list[Item]:
    """The query's items in order: filters applied (and left out), patterns with their terms,
    plain words, and the operators, ``-`` and parentheses that are syntax."""
    tokens = scan(text)
    query.bare_filters = bare_filters(text, tokens)
    kinds = [_kind(token) for token in tokens]
    as_text = resolve_syntax(text, tokens, kinds)
    tokens = merge_text(text, tokens, as_text, lambda t: _kind(t) in ("word", "plain"))
    items: list[Item] = []
    depth = 0
    for token in tokens:
        kind = _kind(token)
        if kind == "lparen":
            depth += 1
        item = Item(kind, token, depth=depth)
        if kind == "rparen":
            depth -= 1
        if kind in ("filter", "pattern") and token.kind == "word":
            term = _apply_filter(query, item, text)
            if term is None:
                continue
            if token.text.startswith("-"):  # -content:x
                items.append(Item("neg", token, depth=depth))
            item.kind, item.term = "pattern", term
        elif kind in ("pattern", "plain"):
            item.term = Term(
                "literal" if token.kind == "quote" else "regex", token.text, token.start
            )
        items.append(item)
    return items


def _keep_suggestion_only_if_it_parses(refused: QueryRejected) -> None:
    """A refusal's ``suggested_query`` becomes a link to search for: it goes when that query
    would be refused in its turn (``NOT timeout`` -> ``NOT "timeout"`` has nothing to find).
    The suggestion quotes plain words, so each level has fewer of them: this ends."""
    suggested = refused.details.get("suggested_query")
    if suggested is None:
        return
    try:
        parse_search_query(suggested)
    except QueryRejected:
        del refused.details["suggested_query"]


def parse_search_query(text: str) -> SearchQuery:
    """Parse ``text``. Raises ``QueryRejected`` for unknown, foreign or misspelt filters, bad
    values, unknown languages, unbalanced quotes and parentheses, operators without terms or
    beside words, and empty or NUL-bearing patterns."""
    query = SearchQuery(text=text)
    items = _items(text, query)
    # A metacharacter-free /.../ is a pattern beside syntax, or with no plain word beside it.
    for index, item in enumerate(items):
        if item.kind != "plain":
            continue
        neighbours = [items[i].kind for i in (index - 1, index + 1) if 0 <= i < len(items)]
        if item.depth or any(k in ("op", "neg") for k in neighbours):
            item.kind = "pattern"
    alone = not any(item.kind == "word" for item in items)
    for item in items:
        if item.kind == "plain":
            item.kind = "pattern" if alone else "word"
    try:
        check_operators(items, text)
    except QueryRejected as refused:
        _keep_suggestion_only_if_it_parses(refused)
        raise
    stream: list[Item] = []
    terms: dict[int, int] = {}
    for item in items:
        if item.kind == "word":
            query.words.append(source(text, item))
            continue
        if item.kind == "pattern":
            assert item.term is not None
            _check_term(query, item.term)
            terms[id(item)] = len(query.terms)
            query.terms.append(item.term)
        stream.append(item)
    if any(item.kind in ("op", "neg", "lparen") for item in stream):
        query.expression = ExpressionParser(stream, terms).parse()
        if matches_without_terms(query.expression, len(query.terms)):
            raise QueryRejected(
                "invalid_expression",
                "this combination also matches files holding none of its terms (NOT only"
                ' leaves files out): add a term to find, e.g. "a" NOT "b"',
                {"position": 0},
            )
    return query
