"""The audit log: every write with who, what, when, from where and how it ended; admins read
it through ``GET /api/audit``; the database refuses to change or delete a row."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, transaction

from accounts.models import AuditEntry
from tests.accounts_support import make_account, token_client
from tests.factories import indexed_repository

pytestmark = pytest.mark.django_db


def test_writes_are_recorded_with_actor_token_address_and_outcome() -> None:
    repository = indexed_repository("audited", ["def f():\n    return 1\n"])
    writer = token_client("write", user=make_account("write", username="wendy"))
    assert writer.post(f"/api/repos/{repository.pk}/reindex").status_code == 202
    assert writer.put("/api/config", {"chat_provider": "none"}, format="json").status_code == 403
    reader = token_client("read", user=make_account("read", username="rita"))
    assert reader.delete(f"/api/repos/{repository.pk}").status_code == 403

    entries = {(e.actor, e.action): e for e in AuditEntry.objects.all()}
    reindex = entries[("wendy", "repository.reindex")]
    assert reindex.outcome == "ok" and reindex.target == str(repository.pk)
    assert reindex.token_name == "tests" and reindex.address == "127.0.0.1"
    assert entries[("wendy", "config.change")].outcome == "refused"
    refused = entries[("rita", "repository.delete")]
    assert refused.outcome == "refused" and refused.details["status"] == 403
    assert "role" in refused.details["message"]
    # Reads are not writes: nothing recorded for them.
    reader.get("/api/repos")
    assert not AuditEntry.objects.filter(action__startswith="repository.list").exists()


def test_anonymous_write_attempts_are_recorded_as_nobody() -> None:
    from rest_framework.test import APIClient

    response = APIClient().post("/api/repos", {"url": "https://example.org/a.git"}, format="json")
    assert response.status_code == 401
    entry = AuditEntry.objects.get(action="repository.add")
    assert entry.actor == "" and entry.outcome == "refused"


def test_admins_read_the_log_filtered_and_paged() -> None:
    admin = token_client("admin", user=make_account("admin", username="ada"))
    writer = token_client("write", user=make_account("write", username="wes"))
    for _ in range(3):
        writer.post("/api/repos/nope/reindex")
    admin.post("/api/tokens", {"name": "x"}, format="json")

    mine = admin.get("/api/audit", {"actor": "wes"}).json()
    assert [e["action"] for e in mine["results"]] == ["repository.reindex"] * 3
    assert all(e["outcome"] == "refused" for e in mine["results"])  # 404: no such repository
    tokens = admin.get("/api/audit", {"action": "token.*"}).json()["results"]
    assert [e["actor"] for e in tokens] == ["ada"]

    first = admin.get("/api/audit", {"limit": 2}).json()
    assert len(first["results"]) == 2 and first["next_before"]
    rest = admin.get("/api/audit", {"limit": 2, "before": first["next_before"]}).json()
    seen = [e["id"] for e in first["results"] + rest["results"]]
    assert seen == sorted(seen, reverse=True) and len(set(seen)) == 4
    assert rest["next_before"] is None

    later = admin.get("/api/audit", {"since": "2999-01-01T00:00:00Z"}).json()
    assert later["results"] == []
    assert writer.get("/api/audit").status_code == 403


@pytest.mark.parametrize(
    "params",
    [{"since": "yesterday"}, {"until": "2026-13-01"}, {"limit": "0"}, {"limit": "x"},
     {"before": "-1"}, {"since": "9999-12-31T23:59:59-17:16"}],
)  # fmt: skip
def test_bad_audit_filters_are_400(params: dict[str, str]) -> None:
    """Including a time that leaves the calendar once moved to UTC (schemathesis found it)."""
    response = token_client("admin").get("/api/audit", params)
    assert response.status_code == 400
    assert next(iter(params)) in response.json()["error"]["message"]


def test_the_database_refuses_to_change_or_delete_audit_rows() -> None:
    token_client("write").post("/api/repos/nope/reindex")
    entry = AuditEntry.objects.get()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).update(outcome="ok")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(pk=entry.pk).delete()
    assert AuditEntry.objects.get().outcome == "refused"


def test_deleting_an_account_keeps_its_history() -> None:
    user = make_account("write", username="gone")
    token_client("write", user=user).post("/api/repos/nope/reindex")
    user.delete()
    assert AuditEntry.objects.get().actor == "gone"


def test_an_offset_postgresql_cannot_store_is_moved_to_utc_not_a_500() -> None:
    response = token_client("admin").get("/api/audit", {"since": "7960-01-16T08:03:38.91-17:16"})
    assert response.status_code == 200 and response.json()["results"] == []
