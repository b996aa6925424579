"""Signing in and out of the UI and the admin: sessions, safe redirects, CSRF and throttling."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from tests.accounts_support import make_account

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"  # make_account's


@pytest.fixture(autouse=True)
def fresh_counters() -> None:
    cache.clear()  # the failure counters live in the cache, which outlives a test


def attempt(
    username: str,
    password: str,
    *,
    address: str = "192.0.2.10",
    path: str = "/sign-in",
    **data: str,
) -> Any:
    return Client(REMOTE_ADDR=address).post(
        path, {"username": username, "password": password, **data}
    )


def signed_in_user(response: Any) -> Any:
    return response.wsgi_request.user if response.wsgi_request.user.is_authenticated else None


def test_signing_in_opens_the_page_asked_for() -> None:
    user = make_account("read")
    page = Client().get("/repos/")
    assert page.status_code == 302 and page["Location"] == "/sign-in?next=/repos/"
    response = attempt(user.username, PASSWORD, next="/repos/")
    assert response.status_code == 302 and response["Location"] == "/repos/"
    assert signed_in_user(response) == user


@pytest.mark.parametrize(
    "target", ["https://evil.example/steal", "//evil.example/", "/\\evil.example", "javascript:x"]
)
def test_a_next_address_off_the_site_is_not_followed(target: str) -> None:
    user = make_account("read")
    response = attempt(user.username, PASSWORD, next=target)
    assert response.status_code == 302 and response["Location"] == "/"


def test_a_wrong_password_says_so_and_signs_nobody_in() -> None:
    user = make_account("read")
    response = attempt(user.username, "wrong")
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
    assert signed_in_user(response) is None


def test_the_sign_in_form_needs_its_csrf_token() -> None:
    user = make_account("read")
    client = Client(enforce_csrf_checks=True)
    forged = client.post("/sign-in", {"username": user.username, "password": PASSWORD})
    assert forged.status_code == 403
    assert "_auth_user_id" not in client.session
    page = client.get("/sign-in")
    token = str(page.context["csrf_token"])
    real = client.post(
        "/sign-in",
        {"username": user.username, "password": PASSWORD, "csrfmiddlewaretoken": token},
    )
    assert real.status_code == 302 and client.session["_auth_user_id"] == str(user.pk)


def test_sign_out_is_a_post_and_ends_the_session() -> None:
    client = Client()
    client.force_login(make_account("write"))
    assert client.get("/sign-out").status_code == 405  # a link or an <img> cannot sign out
    assert client.get("/").status_code == 200
    response = client.post("/sign-out")
    assert response.status_code == 302 and response["Location"] == "/sign-in"
    assert client.get("/").status_code == 302


def test_six_wrong_passwords_then_the_right_one_is_refused() -> None:
    user = make_account("admin")
    for _ in range(5):
        assert attempt(user.username, "guess").status_code == 200
    sixth = attempt(user.username, "guess")
    assert sixth.status_code == 429
    refused = attempt(user.username, PASSWORD)
    assert refused.status_code == 429
    assert signed_in_user(refused) is None
    assert int(refused["Retry-After"]) > 800  # the 15-minute window opened moments ago
    assert "Too many failed sign-ins for this account" in refused.content.decode()
    # From another address it is the same account: still refused.
    assert attempt(user.username, PASSWORD, address="198.51.100.7").status_code == 429


def test_another_account_from_another_address_is_unaffected() -> None:
    victim, other = make_account("read"), make_account("read")
    for _ in range(7):
        attempt(victim.username, "guess", address="192.0.2.10")
    response = attempt(other.username, PASSWORD, address="198.51.100.7")
    assert response.status_code == 302 and signed_in_user(response) == other
    # Seven failures are under the address's budget: a colleague at that address signs in.
    colleague = make_account("read")
    response = attempt(colleague.username, PASSWORD, address="192.0.2.10")
    assert response.status_code == 302


def test_one_address_guessing_many_accounts_is_refused() -> None:
    for number in range(20):
        attempt(f"user{number}", "guess", address="203.0.113.5")
    user = make_account("read")
    response = attempt(user.username, PASSWORD, address="203.0.113.5")
    assert response.status_code == 429
    assert "Too many failed sign-ins for your address" in response.content.decode()
    assert attempt(user.username, PASSWORD, address="192.0.2.99").status_code == 302


def test_a_successful_sign_in_clears_the_account_counter() -> None:
    user = make_account("read")
    for _ in range(2):  # 4 failures and a success, twice: 8 failures, never 5 in a row
        for _ in range(4):
            attempt(user.username, "guess")
        assert attempt(user.username, PASSWORD).status_code == 302


def test_user_names_differing_in_case_share_a_counter() -> None:
    make_account("read", username="alice")
    for _ in range(5):
        attempt("ALICE", "guess")
    assert attempt("alice", PASSWORD).status_code == 429


def test_the_admin_login_is_throttled_too() -> None:
    admin = User.objects.create_superuser("root", "root@example.org", PASSWORD)
    page = Client().get("/admin/")
    assert page.status_code == 302 and page["Location"].startswith("/admin/login/")
    for _ in range(6):
        attempt("root", "guess", path="/admin/login/")
    refused = attempt("root", PASSWORD, path="/admin/login/", next="/admin/")
    assert refused.status_code == 429 and signed_in_user(refused) is None
    assert "Too many failed sign-ins" in refused.content.decode()
    assert "Django administration" in refused.content.decode()  # the admin's own page
    # The UI's page counts the same account.
    assert attempt("root", PASSWORD).status_code == 429
    cache.clear()
    response = attempt("root", PASSWORD, path="/admin/login/", next="/admin/")
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert signed_in_user(response) == admin


def test_the_admin_login_still_refuses_accounts_without_staff_status() -> None:
    user = make_account("write")
    response = attempt(user.username, PASSWORD, path="/admin/login/")
    assert response.status_code == 200 and signed_in_user(response) is None
    assert "staff account" in response.content.decode()


def test_the_counters_work_in_redis_as_deployed(settings: Any) -> None:
    """Production keeps the counters in Redis (shared by the web processes), not in memory."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": settings.REDIS_URL,
            "KEY_PREFIX": f"test-sign-in-{id(settings)}",
        }
    }
    cache.clear()
    user = make_account("read")
    for _ in range(5):
        assert attempt(user.username, "guess").status_code == 200
    refused = attempt(user.username, PASSWORD)
    assert refused.status_code == 429 and 800 < int(refused["Retry-After"]) <= 900
    cache.clear()


def test_sign_in_carries_on_when_the_cache_is_down(settings: Any) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # nothing listens on the discard port
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    user = make_account("read")
    assert attempt(user.username, "guess").status_code == 200
    assert attempt(user.username, PASSWORD).status_code == 302


def test_failures_after_a_success_open_a_full_new_window(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    now = [time.time()]
    monkeypatch.setattr(time, "time", lambda: now[0])  # the cache's expiry follows this clock too
    user = make_account("read")
    attempt(user.username, "guess")
    now[0] += 600  # ten minutes into the first window
    assert attempt(user.username, PASSWORD).status_code == 302
    for _ in range(5):
        attempt(user.username, "guess")
    refused = attempt(user.username, PASSWORD)
    assert refused.status_code == 429 and int(refused["Retry-After"]) == 900
