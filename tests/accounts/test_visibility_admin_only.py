"""Who sees a repository is an administrator's decision (issue 33): through the API a writer can
neither open a restricted repository nor hide a public one; an administrator can, and each
change is audited with the groups before and after."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from accounts.models import AuditEntry
from indexing.models import Repository
from tests.accounts_support import make_account, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop() -> Repository:
    Group.objects.create(name="team-a")
    return Repository.objects.create(url="https://example.org/acme/shop.git", name="acme/shop")


def test_a_writer_cannot_hide_a_public_repository(shop: Repository) -> None:
    writer = token_client("write")
    response = writer.patch(
        f"/api/repos/{shop.pk}", {"visibility_groups": ["team-a"]}, format="json"
    )
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "visibility_admin_only"
    assert error["message"].startswith("only administrators change who may see a repository")
    assert not shop.visible_to_groups.exists()
    assert token_client("read").get(f"/api/repos/{shop.pk}").status_code == 200
    refused = AuditEntry.objects.get(action="repository.patch")
    assert refused.outcome == "refused" and refused.details["error"] == "visibility_admin_only"
    assert not AuditEntry.objects.filter(action="repository.visibility").exists()


def test_an_admin_scoped_token_of_a_writer_is_still_a_writer(shop: Repository) -> None:
    # A token never acts above its user's role; a write token of an admin is a writer too.
    admin = make_account("admin")
    narrowed = token_client(user=admin, scope="write")
    response = narrowed.patch(
        f"/api/repos/{shop.pk}", {"visibility_groups": ["team-a"]}, format="json"
    )
    assert response.status_code == 403


def test_an_administrator_restricts_and_opens_it_and_both_are_audited(shop: Repository) -> None:
    admin = make_account("admin", username="ada")
    client = token_client(user=admin)
    hidden = client.patch(f"/api/repos/{shop.pk}", {"visibility_groups": ["team-a"]}, format="json")
    assert hidden.status_code == 200 and hidden.json()["visibility_groups"] == ["team-a"]
    assert token_client("read").get(f"/api/repos/{shop.pk}").status_code == 404
    opened = client.patch(f"/api/repos/{shop.pk}", {"visibility_groups": []}, format="json")
    assert opened.status_code == 200 and opened.json()["visibility_groups"] == []
    changes = AuditEntry.objects.filter(action="repository.visibility").order_by("id")
    assert [(e.actor, e.details["from"], e.details["to"]) for e in changes] == [
        ("ada", [], ["team-a"]),
        ("ada", ["team-a"], []),
    ]
    assert {e.details["via"] for e in changes} == {"api"}
    assert all(e.token_name == "tests" for e in changes)
