"""The search page's repository and language filters carry facet counts: the files each holds
in what the reader may search (issue 29 item 3)."""

from __future__ import annotations

import re

import pytest

from tests.frontend.signed_in import ui_client
from tests.search.exact_corpus import FILES, indexed, source

pytestmark = pytest.mark.django_db
__all__ = ["indexed", "source"]  # the fixtures


def facet(html: str, name: str, value: str) -> int:
    found = re.search(
        rf'name="{name}" value="{re.escape(value)}">[^<]*<span class="facet-count[^"]*"[^>]*>(\d+)<',
        html,
    )
    assert found, (name, value)
    return int(found.group(1))


def test_repository_and_language_filters_show_file_counts(indexed) -> None:  # type: ignore[no-untyped-def]
    _, repository = indexed
    html = ui_client("read").get("/").content.decode()
    assert facet(html, "repo", str(repository.pk)) == len(FILES)
    python = sum(path.endswith(".py") for path in FILES)
    assert facet(html, "lang", "python") == python == 2
    assert facet(html, "lang", "javascript") == 1
