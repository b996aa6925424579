"""Symbols, go to definition and find references keep to what the account may see: the vault's
definitions, call sites and text are found by a member and by nobody else, and naming the vault
(by name or id) answers exactly as naming a repository that does not exist."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.accounts.visibility_corpus import Corpus, leaks
from tests.accounts_support import token_client

ENDPOINTS = [
    ("/api/symbols", "q", "zanzibar_quokka_token"),
    ("/api/symbols", "q", "zanzibar"),  # prefix and similar names too
    ("/api/symbols/definitions", "name", "zanzibar_quokka_token"),
    ("/api/symbols/references", "name", "zanzibar_quokka_token"),
    ("/api/symbols/references", "name", "connect_vault"),
]


def answer(user: Any, path: str, **params: str) -> tuple[int, dict[str, Any]]:
    response = token_client(user=user).get(path, params)
    return response.status_code, response.json()


@pytest.mark.parametrize(("path", "param", "name"), ENDPOINTS)
def test_symbol_answers_leave_out_what_an_outsider_may_not_see(
    corpus: Corpus, path: str, param: str, name: str
) -> None:
    status, body = answer(corpus.outsider, path, **{param: name})
    assert status == 200, body
    assert leaks(body, corpus.vault) == []
    assert {hit["repository"] for hit in body["results"]} <= {"acme/shop"}
    status, member_body = answer(corpus.member, path, **{param: name})
    assert status == 200
    assert "acme/vault" in {hit["repository"] for hit in member_body["results"]}


def test_references_of_a_restricted_definition_show_only_the_visible_call_site(
    corpus: Corpus,
) -> None:
    _, body = answer(corpus.outsider, "/api/symbols/references", name="zanzibar_quokka_token")
    assert [(h["repository"], h["path"], h["line"], h["via"]) for h in body["results"]] == [
        ("acme/shop", "src/pool.py", 3, "call")
    ]


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/api/symbols", "q"),
        ("/api/symbols/definitions", "name"),
        ("/api/symbols/references", "name"),
    ],
)
def test_naming_the_restricted_repository_is_answered_like_a_missing_one(
    corpus: Corpus, path: str, param: str
) -> None:
    for hidden, missing in (
        ("acme/vault", "acme/nothing"),
        (str(corpus.vault.pk), str(uuid.uuid4())),
    ):
        got_status, got = answer(corpus.outsider, path, **{param: "make_pool", "repo": hidden})
        want_status, want = answer(corpus.outsider, path, **{param: "make_pool", "repo": missing})
        assert got_status == want_status == 404
        assert got == json.loads(json.dumps(want).replace(missing, hidden))
        status, _ = answer(corpus.member, path, **{param: "make_pool", "repo": hidden})
        assert status == 200


@pytest.mark.parametrize("who", ["outsider", "anonymous"])
def test_the_mcp_navigation_tools_keep_to_what_the_viewer_may_see(corpus: Corpus, who: str) -> None:
    from accounts.visibility import Viewer
    from search.mcp import navigation_tools
    from search.mcp.tools import ToolInputError

    viewer = corpus.as_outsider if who == "outsider" else Viewer()
    answers = [
        navigation_tools.find_symbol("zanzibar_quokka_token", viewer=viewer),
        navigation_tools.find_symbol("zanzibar", viewer=viewer),
        navigation_tools.find_references("zanzibar_quokka_token", viewer=viewer),
        navigation_tools.find_references("connect_vault", viewer=viewer),
        navigation_tools.list_files("acme/shop", viewer=viewer),
    ]
    for answer in answers:
        assert leaks(answer, corpus.vault) == [], answer
    assert answers[0]["definitions"] == []
    assert answers[2]["references"] == [
        "acme/shop:src/pool.py:3: token = zanzibar_quokka_token(settings) (call)"
    ]
    for call, args in (
        (navigation_tools.list_files, ("acme/vault",)),
        (navigation_tools.list_files, (str(corpus.vault.pk),)),
        (navigation_tools.find_symbol, ("open_vault", "acme/vault")),
        (navigation_tools.find_references, ("open_vault", "acme/vault")),
    ):
        with pytest.raises(ToolInputError) as caught:
            call(*args, viewer=viewer)
        error = json.loads(str(caught.value))["error"]
        assert error["code"] == "unknown_repo" and "acme/vault" not in error["valid"]
    member = corpus.as_member
    assert navigation_tools.find_symbol("zanzibar_quokka_token", viewer=member)["definitions"]
    assert "src/vault.py" in navigation_tools.list_files("acme/vault", viewer=member)["files"]
