"""Fixtures of the search tests: the real indexed repository of the exact/regex tests."""

from tests.search.exact_corpus import indexed, source  # noqa: F401 - fixtures
