"""Fixtures of the MCP tests: the real indexed repository of the exact/regex search tests."""

from tests.search.exact_corpus import indexed, source  # noqa: F401 - fixtures
