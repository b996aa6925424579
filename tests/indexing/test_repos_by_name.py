"""Repositories are addressable by name wherever the API takes an id: ``/api/repos/acme%2Fshop``
(the name URL-encoded), its jobs, re-index and webhook; shared names and hidden ones."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Group

from tests.accounts_support import make_account, token_client
from tests.factories import indexed_repository

pytestmark = pytest.mark.django_db


def test_a_name_with_a_slash_addresses_the_repository_url_encoded() -> None:
    shop = indexed_repository("acme/shop", ["def f():\n    pass"])
    client = token_client("admin")
    body = client.get("/api/repos/acme%2Fshop").json()
    assert body["id"] == str(shop.pk) and body["name"] == "acme/shop"
    assert client.get(f"/api/repos/{shop.pk}").json()["id"] == str(shop.pk)
    assert client.get("/api/repos/acme%2Fshop/jobs").status_code == 200
    assert (
        client.get("/api/repos/acme%2Fshop/webhook").json()["url"].endswith(f"/api/hooks/{shop.pk}")
    )
    patched = client.patch("/api/repos/acme%2Fshop", {"name": "acme/store"}, format="json")
    assert patched.status_code == 200 and patched.json()["name"] == "acme/store"
    assert client.get("/api/repos/acme%2Fstore").json()["id"] == str(shop.pk)
    reindex = client.post("/api/repos/acme%2Fstore/reindex", format="json")
    assert reindex.status_code == 202


def test_unknown_shared_and_hidden_names() -> None:
    client = token_client("admin")
    missing = client.get("/api/repos/acme%2Fnothing")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert "acme/nothing" in missing.json()["error"]["message"]
    first = indexed_repository("twin", ["def f():\n    pass"])
    second = indexed_repository("twin", ["def f():\n    pass"])
    shared = client.get("/api/repos/twin")
    assert shared.status_code == 400
    assert shared.json()["error"]["code"] == "ambiguous_repository"
    assert set(shared.json()["error"]["details"]["ids"]) == {str(first.pk), str(second.pk)}
    # A name only a group may see: for others exactly like one that does not exist.
    vault = indexed_repository("acme/vault", ["def f():\n    pass"])
    member = make_account("read", groups=["vaulters"])
    vault.visible_to_groups.set([Group.objects.get(name="vaulters")])
    outsider = token_client("read")
    hidden = outsider.get("/api/repos/acme%2Fvault")
    absent = outsider.get("/api/repos/acme%2Fvaulx")
    assert hidden.status_code == absent.status_code == 404
    assert (
        hidden.json()["error"]["message"].replace("vault", "vaulx")
        == absent.json()["error"]["message"]
    )
    assert token_client(user=member).get("/api/repos/acme%2Fvault").status_code == 200
    # A twin the viewer cannot see does not make a visible name ambiguous.
    indexed_repository("acme/vault", ["def g():\n    pass"])
    assert outsider.get("/api/repos/acme%2Fvault").status_code == 200
    assert client.get(f"/api/repos/{uuid.uuid4()}").status_code == 404
