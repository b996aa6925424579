"""The results fragment for a branch search: a hit of another branch names it beside the
repository, and its text (posted without it, as the page does) is read from that branch's rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.frontend.signed_in import api_client, ui_client
from tests.search.test_branch_search import _two_branches

pytestmark = pytest.mark.django_db


def test_a_branch_hit_names_its_branch_and_shows_its_text(tmp_path: Path) -> None:
    _two_branches(tmp_path)
    response = (
        api_client()
        .post(
            "/api/search",
            {"query": "patch release checksum", "branches": ["release/*"]},
            format="json",
        )
        .json()
    )
    hit = response["results"][0]
    assert (hit["file_path"], hit["branch"]) == ("hotfix.py", "release/1.0")
    del hit["content"]  # the page leaves it out; the server reads it from the index
    answer = ui_client().post(
        "/ui/results", json.dumps({"request": {}, "response": response}),
        content_type="application/json",
    )  # fmt: skip
    html = answer.content.decode()
    assert answer.status_code == 200
    assert '<span class="branch" title="branch">@release/1.0</span>' in html
    assert "crc32" in html  # the hotfix's text, stored only for release/1.0
