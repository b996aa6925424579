"""The query language of the search box, ``POST /api/search`` and the MCP tools, parsed here only.

Syntax (everything else is ordinary text)::

    repo:NAME   -repo:NAME     repository name or glob (``repo:http*``); several are OR-ed
    lang:NAME   -lang:NAME     language (``lang:python``)
    file:GLOB   -file:GLOB     path glob, also ``path:`` (``file:src/**/*.py``, ``-file:*_test.go``)
    case:yes|no                case-sensitive matching (default no)
    branch:NAME                a repository's indexed branch
    sym:NAME                   definitions named NAME
    type:symbol|file|semantic  what to search
    "quoted literal"           exact text; ``\\"`` and ``\\\\`` inside it
    /regex/                    a regular expression (RE2 syntax); ``\\/`` inside it

A filter is a known prefix at the start of a word followed directly by its value; a regex is a
whole word that starts with ``/`` + a non-space and ends with a non-space + ``/``. So "HTTP_PROXY /
HTTPS_PROXY", "what does note: mean" and "/usr/bin/env" are plain text. A ``/.../`` word with no
regex metacharacter among other free words ("why does /about/ redirect") is a URL path in a
question, plain text too: as a regex it would only be the literal, and a question's words beside a
pattern would all be required in one file; on its own (``/about/``) it is a regex. A prefix one edit away
from a known one (``rpo:x``) and an unbalanced quote at the start of a word are errors naming
what and where -- a typo must not silently search for the wrong thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from search.exact.errors import QueryRejected

FILTERS = ("repo", "lang", "file", "path", "case", "branch", "sym", "type")
NEGATABLE = frozenset({"repo", "lang", "file", "path"})
TYPES = ("symbol", "file", "semantic")
MAX_FILTERS = 50
MAX_PATTERNS = 10
MAX_VALUE_CHARS = 300
REGEX_METACHARACTERS = frozenset("\\.^$*+?()[]{}|")

TermKind = Literal["literal", "regex"]


@dataclass(frozen=True)
class Term:
    """A quoted literal or a ``/regex/``, as written (escapes resolved), and where it started."""

    kind: TermKind
    text: str
    position: int


@dataclass
class SearchQuery:
    """A parsed query. ``has_syntax`` is False for plain text: that goes to hybrid search as is."""

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


def _edit_distance_at_most_one(a: str, b: str) -> bool:
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diffs = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diffs) == 1:
            return True
        i = diffs[0]
        return len(diffs) == 2 and diffs[1] == i + 1 and a[i] == b[i + 1] and a[i + 1] == b[i]
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _suggest(name: str) -> str | None:
    if len(name) < 3:
        return None
    return next((known for known in FILTERS if _edit_distance_at_most_one(name, known)), None)


def _read_quoted(text: str, start: int) -> tuple[str, int]:
    """The literal of the quote at ``start`` and the index after its closing quote."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in '"\\':
            out.append(text[i + 1])
            i += 2
            continue
        if ch == '"':
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise QueryRejected(
        "unbalanced_quote",
        f'unbalanced quote at position {start}: a "quoted literal" needs a closing quote'
        ' (write \\" for a quote inside it)',
        {"position": start},
    )


def _read_regex(text: str, start: int) -> tuple[str, int] | None:
    """The pattern of a ``/regex/`` word at ``start`` and the index after it, or None when the
    slash does not open one (then it is ordinary text)."""
    if start + 1 >= len(text) or text[start + 1].isspace() or text[start + 1] == "/":
        return None
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append("/" if text[i + 1] == "/" else text[i : i + 2])
            i += 2
            continue
        if ch == "/":
            at_word_end = i + 1 == len(text) or text[i + 1].isspace()
            if not at_word_end or text[i - 1].isspace():
                return None  # "/usr/bin/env", "/ b /": a path or a slash, not a regex
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    return None


def _word_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and not text[end].isspace():
        end += 1
    return end


def _apply_filter(query: SearchQuery, name: str, value: str, negated: bool, position: int) -> None:
    where = {"filter": f"{'-' if negated else ''}{name}:", "position": position}
    if negated and name not in NEGATABLE:
        raise QueryRejected("invalid_filter", f"'-{name}:' cannot be negated", where)
    if len(value) > MAX_VALUE_CHARS:
        raise QueryRejected(
            "invalid_filter", f"'{name}:' value over {MAX_VALUE_CHARS} characters", where
        )
    query.filter_count += 1
    if query.filter_count > MAX_FILTERS:
        raise QueryRejected("too_many_filters", f"at most {MAX_FILTERS} filters", where)
    if name == "case":
        if value.lower() not in ("yes", "no"):
            raise QueryRejected(
                "invalid_filter",
                f"case:{value} at position {position}: use case:yes or case:no",
                where,
            )
        query.case_sensitive = value.lower() == "yes"
    elif name == "type":
        if value.lower() not in TYPES:
            raise QueryRejected(
                "invalid_filter",
                f"type:{value} at position {position}: use type:{'|'.join(TYPES)}",
                where,
            )
        query.type = value.lower()
    elif name == "repo":
        (query.exclude_repos if negated else query.repos).append(value)
    elif name == "lang":
        (query.exclude_languages if negated else query.languages).append(value.lower())
    elif name in ("file", "path"):
        (query.exclude_files if negated else query.files).append(value)
    elif name == "branch":
        query.branches.append(value)
    elif name == "sym":
        query.symbols.append(value)


def _add_term(query: SearchQuery, term: Term) -> None:
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
    query.terms.append(term)


def parse_search_query(text: str) -> SearchQuery:
    """Parse ``text``. Raises ``QueryRejected`` for unknown filters, bad values, unbalanced
    quotes and empty or NUL-bearing patterns."""
    query = SearchQuery(text=text)
    plain_patterns: list[Term] = []  # metacharacter-free /.../ words: the docstring
    i = 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        if text[i] == '"':
            literal, i = _read_quoted(text, i)
            _add_term(query, Term("literal", literal, i - len(literal) - 2))
            continue
        if text[i] == "/":
            start = i
            found = _read_regex(text, i)
            if found is not None:
                pattern, i = found
                if REGEX_METACHARACTERS.isdisjoint(pattern):
                    plain_patterns.append(Term("regex", pattern, start))
                    query.words.append(text[start:i])
                    continue
                _add_term(query, Term("regex", pattern, start))
                continue
        end = _word_end(text, i)
        word = text[i:end]
        negated = word.startswith("-")
        name, colon, value = word[1 if negated else 0 :].partition(":")
        is_prefix = colon and name.isascii() and name.isalpha() and value and value[0] != ":"
        if is_prefix and name.lower() in FILTERS:
            _apply_filter(query, name.lower(), value, negated, i)
        elif is_prefix and (suggestion := _suggest(name.lower())):
            raise QueryRejected(
                "unknown_filter",
                f"unknown filter '{name}:' at position {i} — did you mean {suggestion}:?",
                {"filter": f"{name}:", "position": i, "suggestion": f"{suggestion}:"},
            )
        else:
            query.words.append(word)
        i = end
    if plain_patterns and len(query.words) == len(plain_patterns):
        # Nothing but metacharacter-free /.../ words: they are regexes after all (``/about/``).
        query.words.clear()
        for term in plain_patterns:
            _add_term(query, term)
        query.terms.sort(key=lambda term: term.position)
    return query
