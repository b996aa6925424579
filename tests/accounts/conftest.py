"""Fixtures of the accounts tests."""

from tests.accounts.visibility_corpus import corpus  # noqa: F401
from tests.ask.corpus import chat_model  # noqa: F401
