"""``POST /api/search`` takes repositories by name as well as by id (``repo_ids`` or ``repos``),
as API paths do: the same hits, a clear 404 for a name nobody may see (a restricted one exactly
like a missing one), a 400 for a name two repositories share."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.accounts.test_visibility_api import api
from tests.accounts.visibility_corpus import Corpus
from tests.factories import indexed_repository

pytestmark = pytest.mark.django_db

QUERY = '"zanzibar_quokka_token"'


def search(client: Any, **body: Any) -> tuple[int, dict[str, Any]]:
    response = client.post("/api/search", {"query": QUERY, **body}, format="json")
    return response.status_code, response.json()


def files_of(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(h["repo_name"], h["file_path"]) for h in body["results"]]


def test_a_name_finds_what_the_id_finds(corpus: Corpus) -> None:
    member = api(corpus.member)
    _, by_id = search(member, repo_ids=[str(corpus.vault.pk)])
    _, by_name = search(member, repo_ids=["acme/vault"])
    _, by_repos = search(member, repos=["acme/vault"])
    _, everything = search(member)
    assert (
        files_of(by_id)
        == files_of(by_name)
        == files_of(by_repos)
        == [("acme/vault", "src/vault.py")]
    )
    assert len(files_of(everything)) == 2  # so the filter did something
    _, both = search(member, repos=["acme/shop"], repo_ids=[str(corpus.vault.pk)])
    assert sorted(files_of(both)) == sorted(files_of(everything))
    # Hybrid search takes names too.
    hybrid = member.post(
        "/api/search", {"query": "vault token", "repos": ["acme/shop"]}, format="json"
    ).json()
    assert hybrid["mode"] == "hybrid" and {h["repo_name"] for h in hybrid["results"]} == {
        "acme/shop"
    }


def test_a_restricted_name_answers_like_a_missing_one(corpus: Corpus) -> None:
    outsider = api(corpus.outsider)
    for field in ("repo_ids", "repos"):
        hidden_status, hidden = search(outsider, **{field: ["acme/vault"]})
        missing_status, missing = search(outsider, **{field: ["acme/nothing"]})
        assert hidden_status == missing_status == 404
        assert hidden == json.loads(json.dumps(missing).replace("acme/nothing", "acme/vault"))
        assert hidden["error"]["code"] == "unknown_repository"
        assert hidden["error"]["details"] == {"repos": ["acme/vault"]}
        assert str(corpus.vault.pk) not in json.dumps(hidden)


def test_a_misspelt_name_names_the_nearest_and_several_are_named_each(corpus: Corpus) -> None:
    member = api(corpus.member)
    status, body = search(member, repos=["acme/shp"])
    assert status == 404
    assert body["error"]["message"] == "no repository named 'acme/shp' — did you mean acme/shop?"
    status, body = search(member, repos=["acme/shp", "acme/vaul", "zzz"])
    assert status == 404
    assert body["error"]["message"] == (
        "no repositories named 'acme/shp', 'acme/vaul', 'zzz' — 'acme/shp': did you mean"
        " acme/shop?; 'acme/vaul': did you mean acme/vault?"
    )
    assert body["error"]["details"]["suggestions"] == {
        "acme/shp": ["acme/shop"],
        "acme/vaul": ["acme/vault"],
    }


def test_a_shared_name_is_a_400_listing_the_ids(corpus: Corpus) -> None:
    twin = indexed_repository("acme/shop", ["def other():\n    return 1\n"])
    status, body = search(api(corpus.outsider), repos=["acme/shop"])
    assert status == 400 and body["error"]["code"] == "ambiguous_repository"
    assert set(body["error"]["details"]["ids"]) == {str(corpus.shop.pk), str(twin.pk)}
    # The id still picks one.
    status, body = search(api(corpus.outsider), repos=[str(twin.pk)])
    assert status == 200 and body["total"] == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"repos": "acme/shop"}, 'repos: Expected a list of items but got type "str".'),
        ({"repos": [5]}, "repos: 0: Not a valid string."),
        ({"repos": [""]}, "repos: 0: This field may not be blank."),
        ({"repos": ["x" * 301]}, "repos: 0: Ensure this field has no more than 300 characters."),
        ({"repos": ["acme\x00shop"]}, "repos: 0: Null characters are not allowed."),
        ({"repos": ["a"] * 51}, "repos: Ensure this field has no more than 50 elements."),
        ({"repo_ids": [None]}, "repo_ids: 0: This field may not be null."),
    ],
)
def test_bad_repository_lists_are_400s(corpus: Corpus, body: dict[str, Any], message: str) -> None:
    status, answer = search(api(corpus.member), **body)
    assert status == 400, answer
    assert answer["error"]["code"] == "invalid" and answer["error"]["message"] == message
