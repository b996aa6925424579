"""Webhooks that cannot be abused (issue 33 item 4 and its Low findings): replayed signed
deliveries queue one job; calls that prove nothing are throttled per address, audited as a
count, and answered alike for missing and restricted repositories; a deeply nested signed form
payload is a 400."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from accounts.models import AuditEntry
from indexing.models import IndexJob, JobState, Repository, RepositoryStatus
from tests.indexing.test_webhooks import INDEXED, PROVIDERS, PUSHED, deliver, github, push_body
from tests.refusals import error_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def api() -> APIClient:
    return APIClient()  # git hosts have no account


@pytest.fixture
def repository() -> Repository:
    return Repository.objects.create(
        url="https://git.example.com/acme/demo.git",
        name="acme/demo",
        branch="main",
        status=RepositoryStatus.READY,
        active_generation=1,
        last_indexed_commit=INDEXED,
    )


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_forty_replays_of_a_signed_push_queue_one_job(api, repository, provider) -> None:
    body = push_body(provider, "main", PUSHED)
    headers = PROVIDERS[provider](repository.webhook_secret, body)
    first = deliver(api, repository, body, headers)
    assert first.status_code == 202 and first.json()["status"] == "queued"
    for _ in range(39):
        # The worker is quick (or the commit cannot be fetched): nothing runs to coalesce into.
        IndexJob.objects.filter(repository=repository).update(state=JobState.FAILED)
        again = deliver(api, repository, body, headers)
        assert again.status_code == 200, again.content
        assert again.json()["status"] == "replayed"
        assert "nothing was queued again" in again.json()["reason"]
    assert IndexJob.objects.filter(repository=repository).count() == 1


def test_a_replay_under_a_new_delivery_id_is_still_a_replay(api, repository) -> None:
    body = push_body("github", "main", PUSHED)
    headers = github(repository.webhook_secret, body)
    assert deliver(api, repository, body, headers).json()["status"] == "queued"
    IndexJob.objects.update(state=JobState.FAILED)
    renamed = {**headers, "HTTP_X_GITHUB_DELIVERY": str(uuid.uuid4())}
    assert deliver(api, repository, body, renamed).json()["status"] == "replayed"
    # A new push (a new body) is new work.
    newer = push_body("github", "main", "c" * 40)
    fresh = deliver(api, repository, newer, {**github(repository.webhook_secret, newer),
                                             "HTTP_X_GITHUB_DELIVERY": str(uuid.uuid4())})  # fmt: skip
    assert fresh.json()["status"] == "queued"
    assert IndexJob.objects.count() == 2


def test_a_delivery_that_failed_is_not_remembered(api, repository, monkeypatch) -> None:
    from indexing.webhooks import deliveries

    body = push_body("github", "main", PUSHED)
    headers = github(repository.webhook_secret, body)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(deliveries, "note_remote_tip", broken)
    assert deliver(api, repository, body, headers).status_code == 500
    monkeypatch.undo()
    retried = deliver(api, repository, body, headers)
    assert retried.status_code == 202 and retried.json()["status"] == "queued"


def test_a_missing_and_a_restricted_repository_are_answered_alike(api, repository) -> None:
    repository.visible_to_groups.set([Group.objects.create(name="team-a")])
    missing = Repository(pk=uuid.uuid4())
    body = push_body("github", "main", PUSHED)
    for headers in (github(None, body), github("guessed", body)):
        answers = [deliver(api, target, body, headers) for target in (repository, missing)]
        assert answers[0].status_code == answers[1].status_code == 401
        assert error_of(answers[0]) == error_of(answers[1])
        assert answers[0].headers.get("WWW-Authenticate") == answers[1].headers.get(
            "WWW-Authenticate"
        )


def test_calls_that_prove_nothing_are_throttled_per_address_and_audited_as_a_count(
    api, repository, settings
) -> None:
    settings.REPO_SEARCH_WEBHOOK_REFUSALS_PER_WINDOW = 5
    body = push_body("github", "main", PUSHED)
    unsigned = github(None, body)
    missing = Repository(pk=uuid.uuid4())
    statuses = [
        deliver(api, repository if n % 2 else missing, body, unsigned).status_code
        for n in range(12)
    ]
    assert statuses == [401] * 5 + [429] * 7
    throttled = deliver(api, repository, body, unsigned)
    assert error_of(throttled)["code"] == "throttled"
    assert int(throttled.headers["Retry-After"]) > 0
    # Another address is not held up, and a signed delivery from it is accepted.
    elsewhere = deliver(api, repository, body, {**unsigned, "REMOTE_ADDR": "192.0.2.7"})
    assert elsewhere.status_code == 401
    signed = deliver(
        api,
        repository,
        body,
        {**github(repository.webhook_secret, body), "REMOTE_ADDR": "192.0.2.7"},
    )
    assert signed.status_code == 202

    # 13 refusals from 127.0.0.1 and 1 from 192.0.2.7: rows at 1 and 10, and 1; no row each.
    rows = AuditEntry.objects.filter(action="webhook.refused").order_by("id")
    assert [(row.address, row.details["count"]) for row in rows] == [
        ("127.0.0.1", 1),
        ("127.0.0.1", 10),
        ("192.0.2.7", 1),
    ]
    assert rows[1].details["last"] == "throttled"
    assert not AuditEntry.objects.filter(action="webhook.delivery", outcome="refused").exists()
    assert AuditEntry.objects.filter(action="webhook.delivery", outcome="ok").count() == 1


def test_a_signed_deeply_nested_form_payload_is_400_not_500(api, repository) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    body = urlencode({"payload": deep}).encode()
    response = api.generic(
        "POST",
        f"/api/hooks/{repository.pk}",
        body,
        content_type="application/x-www-form-urlencoded",
        **github(repository.webhook_secret, body),
    )
    assert response.status_code == 400, response.content[:300]
    assert error_of(response)["code"] == "invalid"
    assert not IndexJob.objects.exists()
