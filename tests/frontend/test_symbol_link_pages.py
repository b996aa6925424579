"""The pages a search hit's names link to (``/symbols/definitions``, ``/symbols/references``):
several definitions are listed (the hit's repository first), bad input and a repository the
reader may not see are refused with the reason, like the API."""

from __future__ import annotations

import re

import pytest

from tests.frontend.signed_in import ui_client
from tests.search.corpus import Piece, SourceDoc, indexed_repository

pytestmark = pytest.mark.django_db


def locations(html: str) -> list[str]:
    return re.findall(r'<a class="symbol-location" href="[^"]+">([^<]+)</a>', html)


def test_several_definitions_are_listed_with_the_hits_repository_first() -> None:
    for name in ("acme/zeta", "acme/alpha"):
        indexed_repository(
            name, [SourceDoc("lib/send.py", [Piece("def send():\n    pass\n", "send")])]
        )
    client = ui_client("read")
    page = client.get("/symbols/definitions", {"name": "send", "repo": "acme/zeta"})
    assert page.status_code == 200
    html = page.content.decode()
    assert locations(html) == ["acme/zeta · lib/send.py:1", "acme/alpha · lib/send.py:1"]
    assert "2 definitions" in html
    for href in re.findall(r'<a class="symbol-location" href="([^"]+)"', html):
        assert re.fullmatch(r"/repos/acme/(zeta|alpha)/-/blob/commit\d+/lib/send.py#L1-L2", href)


def test_bad_names_and_unknown_repositories_are_refused_with_the_reason() -> None:
    client = ui_client("read")
    empty = client.get("/symbols/references", {"name": ""})
    assert empty.status_code == 400 and "must name a symbol" in empty.content.decode()
    spaced = client.get("/symbols/definitions", {"name": "two words"})
    assert spaced.status_code == 400
    unknown = client.get("/symbols/references", {"name": "send", "repo": "acme/nowhere"})
    assert unknown.status_code == 404
