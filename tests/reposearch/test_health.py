"""``GET /api/health`` against the real database, broker and worker — and with parts down."""

from __future__ import annotations

import socket

import pytest

from reposearch.celery import app as celery_app
from tests.accounts_support import token_client


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.django_db
def test_health_ok_with_database_broker_and_a_live_worker(celery_worker_process) -> None:
    response = token_client().get("/api/health")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] and body["database"]["pgvector"].startswith("0.")
    assert body["broker"]["ok"]
    assert body["workers"]["count"] >= 1
    assert "embedding" in body["models"]


@pytest.mark.django_db
def test_one_worker_ping_answers_health_for_a_few_seconds(celery_worker_process) -> None:
    from reposearch import health

    health.forget_worker_ping()
    first = token_client().get("/api/health").json()["workers"]
    second = token_client().get("/api/health").json()["workers"]
    assert first["ok"] and second["ok"], (first, second)
    assert second["checked_at"] == first["checked_at"]  # the same ping, not a new 1 s wait
    assert second["count"] == first["count"]


@pytest.mark.django_db
def test_an_expired_worker_ping_is_redone(celery_worker_process, monkeypatch) -> None:
    from reposearch import health

    health.forget_worker_ping()
    monkeypatch.setattr(health, "WORKER_PING_CACHE_SECS", 0.0)
    first = token_client().get("/api/health").json()["workers"]
    second = token_client().get("/api/health").json()["workers"]
    assert second["checked_at"] != first["checked_at"]
    assert second["age_s"] == 0.0


@pytest.mark.django_db
def test_later_pings_stop_at_the_workers_the_full_one_found(
    celery_worker_process, monkeypatch
) -> None:
    """A full ping waits its whole timeout (1 s); the next ones stop once the workers it found
    have answered, so a probe with a 1 s timeout is not failed by a healthy server."""
    from reposearch import health

    health.forget_worker_ping()
    monkeypatch.setattr(health, "WORKER_PING_CACHE_SECS", 0.0)
    first = token_client().get("/api/health").json()["workers"]
    second = token_client().get("/api/health").json()["workers"]
    assert first["ping"] == "full" and second["ping"] == "known workers", (first, second)
    assert second["workers"] == first["workers"]
    monkeypatch.setattr(health, "FULL_PING_SECS", 0.0)  # a full one again: joiners are counted
    third = token_client().get("/api/health").json()["workers"]
    assert third["ping"] == "full" and third["workers"] == first["workers"]


@pytest.mark.django_db
def test_a_ping_that_hears_fewer_workers_than_it_knew_reports_them_gone(
    celery_worker_process, monkeypatch
) -> None:
    from reposearch import health

    health.forget_worker_ping()
    monkeypatch.setattr(health, "WORKER_PING_CACHE_SECS", 0.0)
    known = token_client().get("/api/health").json()["workers"]
    assert known["ok"]
    # One more worker than answers: as when one of them has died since the full ping.
    health._worker_ping["result"]["count"] = known["count"] + 1
    after = token_client().get("/api/health").json()["workers"]
    assert after["ping"] == "full"
    assert after["count"] == known["count"]


# These two change the Celery app's broker at run time; the app keeps pools of the last
# broker it used, so they run after the tests that need the real one.
@pytest.mark.django_db
def test_health_503_names_the_broker_when_it_is_down(settings, monkeypatch) -> None:
    dead = f"redis://127.0.0.1:{closed_port()}/0"
    settings.CELERY_BROKER_URL = dead
    monkeypatch.setattr(celery_app.conf, "broker_url", dead)
    response = token_client().get("/api/health")
    assert response.status_code == 503
    body = response.json()
    assert "broker" in body["down"]
    assert "workers" in body["down"]
    assert body["database"]["ok"]


@pytest.mark.django_db
def test_health_503_names_absent_workers(settings, monkeypatch, celery_worker_process) -> None:
    # The same Redis server, but a database no worker listens on: the broker is up, the
    # session's worker is alive elsewhere, and nobody answers the ping here.
    empty = settings.CELERY_BROKER_URL.rsplit("/", 1)[0] + "/15"
    settings.CELERY_BROKER_URL = empty
    monkeypatch.setattr(celery_app.conf, "broker_url", empty)
    response = token_client().get("/api/health")
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["workers"]
    assert body["workers"]["error"] == "no Celery worker answered the ping"
