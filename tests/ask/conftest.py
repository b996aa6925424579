"""Fixtures of the ask tests (the corpus lives in ``tests.ask.corpus``)."""

from tests.ask.corpus import chat_model, shop  # noqa: F401
