"""What a user typed, read: full-text terms and phrases, what the question's words ask for, and
path globs.

**Terms.** Tokens come from ``indexing.identifiers.identifier_words`` -- the function that built
every chunk's ``tsvector`` -- so ``parseHttpHeader``, ``parse_http_header`` and ``parse http
header`` meet: each gives ``parse``, ``http``, ``header``, and a compound identifier also gives its
whole form (``parsehttpheader``) so that the exact identifier ranks first. Text between double
quotes is a phrase: its tokens must appear in that order (``<->`` in the tsquery). English function
words (``where``, ``does``, ``the``, ``of``: ``STOPWORDS``) stay search terms (BM25's idf weighs
them down); the learned ranking model leaves them out of the question's content words
(``content_words``). Every token is a run of letters and digits; tsquery
literals are still quoted and escaped.

**Question words** say what chunks a question wants: tests, documentation, a usage question ("how
do I ..."). ``search.retrieval.scope`` decides the scope from them; the ranking signals read the
same words.

**Path globs** (the ``file:`` / ``path:`` filters and ``paths`` of every search mode) are
fnmatch-style and become anchored PostgreSQL regular expressions: ``*`` and ``?`` stay within one
path segment, ``**`` crosses directories, ``[abc]`` / ``[!a]`` are character classes, and a glob
without ``/`` matches the file name in any directory (``*.py``, ``test_*.go``); a glob ending in
``/`` matches everything under that directory. Every other character is escaped, so a glob can
never inject regex syntax.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from indexing.identifiers import identifier_words, split_identifier
from reposearch.domain_errors import DomainError

MAX_TERMS = 32
MAX_PHRASE_TOKENS = 16
MAX_PHRASES = 4
_PHRASE = re.compile(r'"([^"]*)"')
_IDENTIFIER_QUERY = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*")
_SEPARATORS = re.compile(r"::|#|->")
# Pronouns, articles, auxiliaries, question words, and prepositions and conjunctions that have
# no meaning of their own in code. Words that do name things in code (not, no, all, any, each,
# first, last, new, before, after, into, over, only, once, next, out, up, down...) are not here.
_STOPWORD_TEXT = """
    a an the this that these those it its they them their theirs there here
    i me my mine we us our ours you your yours he him his she her hers one ones
    is are was were be been being am do does did doing done has have had having
    will would shall should can could may might must
    what which who whom whose when where why how whether
    of to in on at by for with about as from than then so such
    and or but nor if also just very too
    some something anything somewhere anywhere
    don doesn didn isn aren wasn weren won shouldn couldn wouldn
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class ParsedQuery:
    text: str
    terms: tuple[str, ...]  # every token that scores (split words and whole forms), unique
    words: tuple[str, ...]  # the split words only: "all terms matched" is judged on these
    phrases: tuple[tuple[str, ...], ...]  # token sequences that must appear in order

    @property
    def is_empty(self) -> bool:
        return not self.terms


def parse_query(text: str) -> ParsedQuery:
    """Terms, words and phrases of ``text`` (capped at ``MAX_TERMS`` terms)."""
    phrases: list[tuple[str, ...]] = []
    for match in _PHRASE.finditer(text):
        tokens = tuple(identifier_words(match.group(1)))[:MAX_PHRASE_TOKENS]
        if len(tokens) > 1 and len(phrases) < MAX_PHRASES:
            phrases.append(tokens)
    plain = text.replace('"', " ")
    terms = identifier_words(plain, unique=True)[:MAX_TERMS]
    split_words = {word for chunk in plain.split() for word in split_identifier(chunk)}
    words = tuple(term for term in terms if term in split_words) or tuple(terms)
    return ParsedQuery(text=text, terms=tuple(terms), words=words, phrases=tuple(phrases))


def normalise_symbol(symbol: str) -> str:
    """``Needed::Size``, ``Foo#bar``, ``a->b`` -> dotted and lower-case, as symbols compare."""
    return _SEPARATORS.sub(".", symbol).lower()


def identifier_query(text: str) -> str | None:
    """The normalised name when the whole query is one identifier (``take_while_m_n``,
    ``ScriptInfo.load_app``, ``Needed::Size``), else None."""
    stripped = text.strip().strip("`").removesuffix("()")
    if not _IDENTIFIER_QUERY.fullmatch(stripped):
        return None
    return normalise_symbol(stripped)


def lexeme(token: str) -> str:
    """A tsquery operand for one token, quoted so no character is read as an operator."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_any(tokens: tuple[str, ...] | list[str]) -> str:
    return " | ".join(lexeme(t) for t in tokens)


def tsquery_all(tokens: tuple[str, ...] | list[str]) -> str:
    return " & ".join(lexeme(t) for t in tokens)


def tsquery_phrase(tokens: tuple[str, ...]) -> str:
    return " <-> ".join(lexeme(t) for t in tokens)


def required_tsquery(parsed: ParsedQuery) -> str | None:
    """The phrases every result must contain, or None when the query has none."""
    if not parsed.phrases:
        return None
    return " & ".join(f"({tsquery_phrase(p)})" for p in parsed.phrases)


# Words a question shares with a chunk's file and symbol (features of the learned order)


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def path_words(path: str) -> set[str]:
    """The words of a file's name (``test_sessions.py`` -> test, session), singular. ``path``
    is ``repo-id/path``."""
    return set(_words_named(tuple(path.split("/")[1:][-1:])))


@functools.lru_cache(maxsize=65536)  # the same names come back in every search (and copy)
def _words_named(named: tuple[str, ...]) -> frozenset[str]:
    words: set[str] = set()
    for part in named:
        stem = part.split(".", 1)[0] or part
        words.update(_singular(w) for w in split_identifier(stem) if len(w) >= 3)
    return frozenset(words)


def content_words(query: str) -> list[str]:
    """A prose query's words that may name a file (no stop words, 3+ letters); none for a
    one-identifier query (the exact-name signal handles those)."""
    if identifier_query(query) is not None:
        return []
    return [w for w in identifier_words(query, unique=True) if len(w) >= 3 and w not in STOPWORDS]


@functools.lru_cache(maxsize=65536)
def same_word(a: str, b: str) -> bool:
    """Two words that differ by an ending only (``registered`` / ``register``, ``blueprints``
    / ``blueprint``, ``signed`` / ``sign``): they share all but two letters of the shorter one,
    and at least four (so short words collide: ``read`` / ``ready``)."""
    if a == b:
        return True
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= max(4, min(len(a), len(b)) - 2) and abs(len(a) - len(b)) <= 3


# What the question's words ask for

TEST_WORDS = frozenset(
    {
        "test",
        "tests",
        "testing",
        "tested",
        "spec",
        "specs",
        "pytest",
        "unittest",
        "unittests",
        "fixture",
        "fixtures",
        "conftest",
        "mock",
        "mocks",
        "mocking",
        "testcase",
        "testcases",
    }
)
DOC_WORDS = frozenset(
    {
        "doc",
        "docs",
        "documentation",
        "documented",
        "readme",
        "guide",
        "guides",
        "tutorial",
        "tutorials",
        "howto",
        "manual",
        "changelog",
        "docstring",
        "docstrings",
        "rst",
        "markdown",
        "faq",
    }
)
# Words that bring tests / docs into scope but do not say the question wants them first: a
# docstring or a mock is as often the code's own business ("where are docstrings parsed").
NOT_INTENT_WORDS = frozenset({"docstring", "docstrings", "mock", "mocks", "mocking"})
# A question asked in the first person ("how do I install it", "can I change the error page")
# or "how to ..." is a usage question: documentation may answer it, so it is searched too --
# included, not preferred (code still answers most of them).
USAGE_WORDS = frozenset({"i", "i'm", "i've", "i'd", "me", "my", "we", "our"})
_TOKEN_SPLIT = re.compile(r"[\s,.;:!?()\[\]\"]+")


def query_mentions(query: str, vocabulary: frozenset[str]) -> str | None:
    """The first word of ``query`` in ``vocabulary`` (identifiers split), or None."""
    for word in identifier_words(query):
        if word in vocabulary:
            return word
    return None


def query_intent(query: str, vocabulary: frozenset[str]) -> str | None:
    """The first word of ``query`` that says it wants that kind of chunk first, or None."""
    return query_mentions(query, vocabulary - NOT_INTENT_WORDS)


def usage_question(query: str) -> str | None:
    """What makes ``query`` a usage question (first person, "how to"), or None."""
    lowered = query.lower()
    if re.search(r"\bhow to\b", lowered):
        return "how to"
    for token in _TOKEN_SPLIT.split(lowered):
        if token in USAGE_WORDS:
            return token
    return None


# Path globs

MAX_GLOBS = 20
MAX_GLOB_LENGTH = 300


class InvalidGlob(DomainError, ValueError):
    """A path glob the search cannot use; the API names the ``paths`` field."""

    def api_code(self) -> str:
        return "invalid"

    def api_message(self) -> str:
        return "paths: " + str(self)

    def api_details(self) -> dict[str, Any]:
        return {"field": "paths"}


def glob_to_regex(glob: str) -> str:
    """An anchored PostgreSQL (ARE) regex for one fnmatch-style path glob."""
    if not glob or len(glob) > MAX_GLOB_LENGTH or "\x00" in glob:
        raise InvalidGlob(f"path glob must be 1..{MAX_GLOB_LENGTH} characters")
    pattern = glob.lstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    prefix = "^" if "/" in pattern.rstrip("/") else "^(?:.*/)?"
    if pattern.endswith("/"):
        pattern += "**"
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2)
            body = pattern[i + 1 : end] if end != -1 else ""
            negate = body[:1] in ("!", "^")
            members = body[1:] if negate else body
            if end != -1 and members and re.fullmatch(r"[\w.\-]+", members):
                escaped = "".join(_class_member(m) for m in members)
                out.append(f"[{'^' if negate else ''}{escaped}]")
                i = end + 1
                continue
            out.append(_literal(ch))
        else:
            out.append(_literal(ch))
        i += 1
    return prefix + "".join(out) + "$"


def _literal(ch: str) -> str:
    return ch if ch.isalnum() or ch == "/" else "\\" + ch


def _class_member(ch: str) -> str:
    # A range needs its dash; anything else in a class is a plain member.
    return ch if ch.isalnum() or ch in "-_" else "\\" + ch


def exact_path_regex(path: str) -> str:
    """An anchored PostgreSQL regex matching ``path`` and nothing else."""
    if not path or len(path) > MAX_GLOB_LENGTH or "\x00" in path:
        raise InvalidGlob(f"a path must be 1..{MAX_GLOB_LENGTH} characters")
    return "^" + "".join(_literal(ch) for ch in path.lstrip("/")) + "$"


def paths_regex(globs: Sequence[str] | None) -> str | None:
    if not globs:
        return None
    if len(globs) > MAX_GLOBS:
        raise InvalidGlob(f"at most {MAX_GLOBS} path globs")
    return "|".join(f"(?:{glob_to_regex(g)})" for g in globs)
