"""Push webhooks as each git host sends them: its headers, its signature scheme, its payload.

The signatures are made here the way each provider documents it (HMAC-SHA256 of the raw body
with the secret; GitLab sends the secret itself), so a mistake in the server's scheme fails.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from indexing.models import IndexJob, JobState, Repository, RepositoryStatus
from tests.accounts_support import token_client
from tests.refusals import error_of

INDEXED = "a" * 40
PUSHED = "b" * 40


@pytest.fixture
def api() -> APIClient:
    return token_client()


@pytest.fixture
def repository(db) -> Repository:  # type: ignore[no-untyped-def]
    return Repository.objects.create(
        url="https://git.example.com/acme/demo.git",
        name="acme/demo",
        branch="main",
        status=RepositoryStatus.READY,
        active_generation=1,
        last_indexed_commit=INDEXED,
    )


def _hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def github(secret: str | None, body: bytes, event: str = "push") -> dict[str, str]:
    # GitHub gives every delivery an id of its own (its retries keep it).
    headers = {"HTTP_X_GITHUB_EVENT": event, "HTTP_X_GITHUB_DELIVERY": str(uuid.uuid4())}
    if secret is not None:
        headers["HTTP_X_HUB_SIGNATURE_256"] = "sha256=" + _hex(secret, body)
    return headers


def gitlab(secret: str | None, body: bytes, event: str = "Push Hook") -> dict[str, str]:
    headers = {"HTTP_X_GITLAB_EVENT": event}
    if secret is not None:
        headers["HTTP_X_GITLAB_TOKEN"] = secret
    return headers


def gitea(secret: str | None, body: bytes, event: str = "push") -> dict[str, str]:
    # Gitea sends GitHub's event header as well; its own signature is the bare hex digest.
    headers = {"HTTP_X_GITEA_EVENT": event, "HTTP_X_GITHUB_EVENT": event}
    if secret is not None:
        headers["HTTP_X_GITEA_SIGNATURE"] = _hex(secret, body)
    return headers


def forgejo(secret: str | None, body: bytes, event: str = "push") -> dict[str, str]:
    headers = {"HTTP_X_FORGEJO_EVENT": event, "HTTP_X_GITEA_EVENT": event}
    if secret is not None:
        headers["HTTP_X_FORGEJO_SIGNATURE"] = _hex(secret, body)
        headers["HTTP_X_GITEA_SIGNATURE"] = _hex(secret, body)
    return headers


def bitbucket(secret: str | None, body: bytes, event: str = "repo:push") -> dict[str, str]:
    headers = {"HTTP_X_EVENT_KEY": event, "HTTP_X_HOOK_UUID": "c4f2b3a4"}
    if secret is not None:
        headers["HTTP_X_HUB_SIGNATURE"] = "sha256=" + _hex(secret, body)
    return headers


def push_body(provider: str, branch: str, after: str) -> bytes:
    payload: dict[str, Any]
    if provider == "bitbucket":
        new = (
            None
            if after == "0" * 40
            else {"type": "branch", "name": branch, "target": {"hash": after}}
        )
        payload = {
            "push": {"changes": [{"new": new, "old": {"type": "branch", "name": branch}}]},
            "repository": {"full_name": "acme/demo"},
        }
    else:
        payload = {"ref": f"refs/heads/{branch}", "before": INDEXED, "after": after}
        if provider == "gitlab":
            payload |= {"object_kind": "push", "checkout_sha": after}
    return json.dumps(payload).encode()


PROVIDERS = {
    "github": github,
    "gitlab": gitlab,
    "gitea": gitea,
    "forgejo": forgejo,
    "bitbucket": bitbucket,
}


def deliver(api: APIClient, repository: Repository, body: bytes, headers: dict[str, str]):  # type: ignore[no-untyped-def]
    return api.generic(
        "POST",
        f"/api/hooks/{repository.pk}",
        body,
        content_type="application/json",
        **headers,
    )


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.django_db
def test_a_signed_push_to_the_indexed_branch_queues_one_incremental_reindex(
    api, repository, provider
) -> None:
    body = push_body(provider, "main", PUSHED)
    response = deliver(api, repository, body, PROVIDERS[provider](repository.webhook_secret, body))
    assert response.status_code == 202, response.json()
    answer = response.json()
    assert answer["status"] == "queued"
    assert answer["provider"] == provider
    assert answer["commit"] == PUSHED
    job = IndexJob.objects.get(repository=repository)
    assert (job.pk, job.kind, job.state) == (answer["job_id"], "incremental", JobState.QUEUED)
    shown = api.get(f"/api/repos/{repository.pk}").json()
    assert shown["remote_tip"] == PUSHED
    assert shown["behind"] is True

    # The same delivery again (a replay, or the host retrying): nothing more queued.
    again = deliver(api, repository, body, PROVIDERS[provider](repository.webhook_secret, body))
    assert again.status_code == 200
    assert again.json()["status"] == "replayed"
    assert IndexJob.objects.filter(repository=repository).count() == 1


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.django_db
def test_a_wrong_missing_or_stale_secret_is_401_and_queues_nothing(
    api, repository, provider
) -> None:
    body = push_body(provider, "main", PUSHED)
    sign = PROVIDERS[provider]
    wrong = deliver(api, repository, body, sign("not-the-secret", body))
    assert wrong.status_code == 401
    assert error_of(wrong)["code"] == "bad_signature"
    missing = deliver(api, repository, body, sign(None, body))
    assert missing.status_code == 401
    assert error_of(missing)["code"] == "missing_signature"

    stale = repository.webhook_secret
    rotated = api.post(f"/api/repos/{repository.pk}/webhook/rotate").json()
    assert rotated["secret"] != stale
    refused = deliver(api, repository, body, sign(stale, body))
    assert refused.status_code == 401
    assert not IndexJob.objects.filter(repository=repository).exists()
    assert Repository.objects.get(pk=repository.pk).remote_tip == ""

    accepted = deliver(api, repository, body, sign(rotated["secret"], body))
    assert accepted.status_code == 202
    assert accepted.json()["status"] == "queued"


@pytest.mark.parametrize("provider", ["github", "gitea", "bitbucket"])
@pytest.mark.django_db
def test_a_body_changed_after_signing_is_401(api, repository, provider) -> None:
    signed = push_body(provider, "main", INDEXED)
    tampered = push_body(provider, "main", PUSHED)
    response = deliver(
        api, repository, tampered, PROVIDERS[provider](repository.webhook_secret, signed)
    )
    assert response.status_code == 401
    assert not IndexJob.objects.exists()


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.django_db
def test_a_push_to_another_branch_is_202_with_the_reason_and_nothing_queued(
    api, repository, provider
) -> None:
    body = push_body(provider, "feature/x", PUSHED)
    response = deliver(api, repository, body, PROVIDERS[provider](repository.webhook_secret, body))
    assert response.status_code == 202
    answer = response.json()
    assert answer["status"] == "ignored"
    assert "refs/heads/feature/x" in answer["reason"] and "'main'" in answer["reason"]
    assert not IndexJob.objects.exists()


@pytest.mark.django_db
def test_pings_are_answered_and_queue_nothing(api, repository) -> None:
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    response = deliver(api, repository, body, github(repository.webhook_secret, body, "ping"))
    assert response.status_code == 200
    assert response.json()["status"] == "pong"
    body = json.dumps({"test": True}).encode()
    response = deliver(
        api, repository, body, bitbucket(repository.webhook_secret, body, "diagnostics:ping")
    )
    assert response.status_code == 200
    assert response.json()["status"] == "pong"
    unsigned_ping = deliver(api, repository, body, github(None, body, "ping"))
    assert unsigned_ping.status_code == 401
    assert not IndexJob.objects.exists()


@pytest.mark.django_db
def test_a_push_of_the_indexed_commit_is_up_to_date(api, repository) -> None:
    body = push_body("github", "main", INDEXED)
    response = deliver(api, repository, body, github(repository.webhook_secret, body))
    assert response.status_code == 202
    assert response.json()["status"] == "up_to_date"
    assert not IndexJob.objects.exists()
    assert api.get(f"/api/repos/{repository.pk}").json()["behind"] is False


@pytest.mark.django_db
def test_a_deleted_branch_keeps_the_index_and_says_so(api, repository) -> None:
    body = push_body("github", "main", "0" * 40)
    response = deliver(api, repository, body, github(repository.webhook_secret, body))
    assert response.status_code == 202
    assert response.json()["reason"] == "the branch was deleted upstream"
    shown = api.get(f"/api/repos/{repository.pk}").json()
    assert "deleted upstream" in shown["poll_error"]
    assert shown["behind"] is None
    assert shown["last_indexed_commit"] == INDEXED
    assert not IndexJob.objects.exists()


@pytest.mark.django_db
def test_a_form_encoded_github_delivery_is_read(api, repository) -> None:
    from urllib.parse import urlencode

    body = urlencode({"payload": push_body("github", "main", PUSHED).decode()}).encode()
    response = api.generic(
        "POST",
        f"/api/hooks/{repository.pk}",
        body,
        content_type="application/x-www-form-urlencoded",
        **github(repository.webhook_secret, body),
    )
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "queued"


@pytest.mark.django_db
def test_oversize_bodies_are_413_before_anything_is_read(api, repository) -> None:
    body = b'{"ref": "refs/heads/main", "after": "' + PUSHED.encode() + b'", "pad": "'
    body += b"x" * (1024 * 1024) + b'"}'
    response = deliver(api, repository, body, github(repository.webhook_secret, body))
    assert response.status_code == 413
    assert error_of(response)["code"] == "body_too_large"
    assert not IndexJob.objects.exists()


@pytest.mark.django_db
def test_unknown_repositories_are_refused_like_a_wrong_signature(api, repository) -> None:
    body = push_body("github", "main", PUSHED)
    response = api.generic(
        "POST",
        "/api/hooks/00000000-0000-0000-0000-000000000000",
        body,
        content_type="application/json",
        **github(repository.webhook_secret, body),
    )
    wrong = deliver(api, repository, body, github("not-the-secret", body))
    assert response.status_code == wrong.status_code == 401
    assert error_of(response) == error_of(wrong)
    assert error_of(response)["code"] == "bad_signature"


@pytest.mark.django_db
def test_a_signed_body_that_is_not_a_push_payload_is_400(api, repository) -> None:
    body = b'{"ref": 5}'
    response = deliver(api, repository, body, github(repository.webhook_secret, body))
    assert response.status_code == 400
    assert "ref and after" in error_of(response)["message"]
    body = b"not json"
    response = deliver(api, repository, body, gitlab(repository.webhook_secret, body))
    assert response.status_code == 400


@pytest.mark.django_db
def test_the_webhook_endpoint_shows_the_url_and_secret(api, repository) -> None:
    shown = api.get(f"/api/repos/{repository.pk}/webhook").json()
    assert shown["url"] == f"http://testserver/api/hooks/{repository.pk}"
    assert shown["secret"] == repository.webhook_secret
    assert len(shown["secret"]) >= 40
    other = Repository.objects.create(url="https://git.example.com/acme/other.git", name="o")
    assert other.webhook_secret != repository.webhook_secret


@pytest.mark.django_db
def test_a_push_before_the_first_fetch_knows_the_branch_is_ignored(api) -> None:
    pending = Repository.objects.create(url="https://git.example.com/acme/new.git", name="new")
    body = push_body("github", "main", PUSHED)
    response = deliver(api, pending, body, github(pending.webhook_secret, body))
    assert response.status_code == 202
    assert response.json()["status"] == "ignored"
    assert "first fetch" in response.json()["reason"]
    assert not IndexJob.objects.exists()
