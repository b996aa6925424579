"""What a question's words say about the chunks it wants: tests, documentation, a usage question
("how do I ..."). ``search.retrieval.scope`` decides the scope from them; the ranking signals
read the same words.
"""

from __future__ import annotations

import re

from indexing.identifiers import identifier_words

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
