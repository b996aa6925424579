"""Fixtures of the MCP tests: the real indexed repository of the exact/regex search tests, and
the visibility tests' two repositories (one restricted to a group)."""

from tests.accounts.visibility_corpus import corpus  # noqa: F401 - fixture
from tests.search.exact_corpus import indexed, source  # noqa: F401 - fixtures
