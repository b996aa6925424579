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


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A settable clock; the in-memory cache's expiry follows it too."""
    import time

    now = [time.time()]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


def test_wrong_passwords_from_one_address_wait_longer_and_longer(clock: list[float]) -> None:
    user = make_account("admin")
    for _ in range(6):  # five free attempts, and the sixth closes the door for 2 s
        assert attempt(user.username, "guess").status_code == 200
    refused = attempt(user.username, PASSWORD)  # the right password too, while it is closed
    assert refused.status_code == 429 and signed_in_user(refused) is None
    assert refused["Retry-After"] == "2"
    assert "Too many failed sign-ins for this account from your address" in (
        refused.content.decode()
    )
    waits = []
    for _ in range(4):
        clock[0] += int(attempt(user.username, "guess").get("Retry-After") or 0)
        assert attempt(user.username, "guess").status_code == 200
        waits.append(int(attempt(user.username, "guess")["Retry-After"]))
    assert waits == [4, 8, 16, 32]  # a refused attempt is not counted: waiting is the way on
    clock[0] += 32
    response = attempt(user.username, PASSWORD)
    assert response.status_code == 302 and signed_in_user(response) == user


def test_the_delay_stops_growing_at_its_cap(clock: list[float], settings: Any) -> None:
    settings.REPO_SEARCH_SIGN_IN_MAX_DELAY_SECS = 60
    user = make_account("read")
    for _ in range(30):
        clock[0] += 61
        attempt(user.username, "guess")
    assert attempt(user.username, "guess")["Retry-After"] == "60"


def test_a_strangers_guesses_never_stop_the_user_signing_in_from_their_address(
    clock: list[float],
) -> None:
    victim = make_account("read")
    assert attempt(victim.username, PASSWORD, address="192.0.2.10").status_code == 302
    for _ in range(200):  # a stranger keeps guessing, as fast as the delays let them
        clock[0] += int(
            attempt(victim.username, "guess", address="203.0.113.5").get("Retry-After") or 0
        )
        attempt(victim.username, "guess", address="203.0.113.5")
    assert attempt(victim.username, "guess", address="203.0.113.5").status_code == 429
    response = attempt(victim.username, PASSWORD, address="192.0.2.10")
    assert response.status_code == 302 and signed_in_user(response) == victim


def test_twenty_wrong_passwords_from_another_address_leave_the_user_in() -> None:
    user = make_account("read")  # has never signed in: no address of theirs is known yet
    for _ in range(20):
        attempt(user.username, "guess", address="203.0.113.5")
    assert attempt(user.username, PASSWORD, address="203.0.113.5").status_code == 429
    response = attempt(user.username, PASSWORD, address="192.0.2.10")
    assert response.status_code == 302 and signed_in_user(response) == user


def test_guesses_from_many_addresses_slow_new_addresses_but_not_the_users_own(
    clock: list[float],
) -> None:
    victim = make_account("read")
    assert attempt(victim.username, PASSWORD, address="192.0.2.10").status_code == 302
    for number in range(101):  # each from its own address: under every per-address budget
        attempt(victim.username, "guess", address=f"10.1.{number // 250}.{number % 250}")
    from_new = attempt(victim.username, PASSWORD, address="198.51.100.7")
    assert from_new.status_code == 429
    assert "for this account from a new address" in from_new.content.decode()
    assert int(from_new["Retry-After"]) <= 4  # a delay, not a lock
    response = attempt(victim.username, PASSWORD, address="192.0.2.10")  # where they signed in
    assert response.status_code == 302 and signed_in_user(response) == victim


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


def test_one_address_guessing_many_accounts_is_slowed_down() -> None:
    for number in range(21):
        attempt(f"user{number}", "guess", address="203.0.113.5")
    user = make_account("read")
    response = attempt(user.username, PASSWORD, address="203.0.113.5")
    assert response.status_code == 429
    assert "Too many failed sign-ins for your address" in response.content.decode()
    assert attempt(user.username, PASSWORD, address="192.0.2.99").status_code == 302


def test_a_successful_sign_in_clears_the_account_counter() -> None:
    user = make_account("read")
    for _ in range(2):  # 5 failures and a success, twice: 10 failures, never 6 in a row
        for _ in range(5):
            attempt(user.username, "guess")
        assert attempt(user.username, PASSWORD).status_code == 302


def test_user_names_differing_in_case_share_a_counter() -> None:
    make_account("read", username="alice")
    for _ in range(6):
        attempt("ALICE", "guess")
    assert attempt("alice", PASSWORD).status_code == 429


def test_throttling_is_audited_once_per_scope_not_per_attempt(clock: list[float]) -> None:
    from accounts.models import AuditEntry

    user = make_account("read")
    for _ in range(40):
        clock[0] += 1000
        attempt(user.username, "guess", address="203.0.113.5")
    rows = AuditEntry.objects.filter(action="sign_in.throttled")
    assert [(row.details["scope"], row.target) for row in rows] == [
        ("address", ""),
        ("pair", user.username),
    ]
    assert {row.address for row in rows} == {"203.0.113.5"}
    assert all(row.outcome == "refused" for row in rows)


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
    for _ in range(6):
        assert attempt(user.username, "guess").status_code == 200
    refused = attempt(user.username, PASSWORD)
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 2
    assert attempt(user.username, PASSWORD, address="198.51.100.7").status_code == 302
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


def test_counts_are_forgotten_a_window_after_the_last_attempt(clock: list[float]) -> None:
    user = make_account("read")
    for _ in range(6):
        attempt(user.username, "guess")
    clock[0] += 900 + 900 + 1  # REPO_SEARCH_SIGN_IN_WINDOW_SECS past the longest delay
    for _ in range(5):  # five free attempts again
        assert attempt(user.username, "guess").status_code == 200
    assert attempt(user.username, PASSWORD).status_code == 302
