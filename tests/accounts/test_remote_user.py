"""Sign-in by a trusted reverse proxy's header: honoured from trusted proxies, from nobody else.

Requests come through Django's test client with the proxy's address as ``REMOTE_ADDR``, and once
through a real uvicorn (the web server ``make up`` runs), where an address of the sender's
choosing in ``X-Forwarded-For`` must not make a local process a trusted proxy.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client

from accounts.identity.proxies import client_address
from accounts.models import AuditEntry
from accounts.roles import Role, role_of

ROOT = Path(__file__).resolve().parents[2]
PROXY = "10.1.2.3"


@pytest.fixture
def proxy_settings(settings):
    settings.REPO_SEARCH_TRUSTED_PROXIES = ["10.0.0.0/8"]
    settings.REPO_SEARCH_REMOTE_USER_HEADER = "X-Forwarded-User"
    settings.REPO_SEARCH_REMOTE_GROUPS_HEADER = "X-Forwarded-Groups"
    settings.REPO_SEARCH_IDENTITY_GROUP_MAP = {"idp-admins": "reposearch-admin"}
    return settings


def signed_in_user(client: Client) -> User | None:
    """Who the client's session is signed in as (the UI and DRF's session authentication read it)."""
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id) if user_id else None


@pytest.mark.django_db
def test_a_trusted_proxy_signs_in_a_new_user_with_its_groups_and_role(proxy_settings) -> None:
    client = Client(REMOTE_ADDR=PROXY)
    assert client.get("/api/repos").status_code == 401  # the proxy, naming nobody
    response = client.get(
        "/api/repos",
        headers={
            "X-Forwarded-User": "alice",
            "X-Forwarded-Groups": "team-a, reposearch-write",
            "X-Forwarded-For": "198.51.100.4",
        },
    )
    assert response.status_code == 200  # DRF sees her through the session
    alice = signed_in_user(client)
    assert alice is not None and alice.username == "alice"
    created = AuditEntry.objects.get(action="account.create", target="alice")
    assert created.details == {"source": "proxy"} and created.address == "198.51.100.4"
    assert not alice.has_usable_password()  # only the proxy can sign her in
    assert set(alice.groups.values_list("name", flat=True)) == {"team-a", "reposearch-write"}
    assert role_of(alice) == Role.WRITE

    # The proxy now sends other groups (she left team-a, joined the admins through a mapping).
    headers = {"X-Forwarded-User": "alice", "X-Forwarded-Groups": "idp-admins"}
    assert client.get("/api/audit", headers=headers).status_code == 200  # admin-only
    alice = User.objects.get(username="alice")
    assert set(alice.groups.values_list("name", flat=True)) == {"reposearch-admin"}
    assert role_of(alice) == Role.ADMIN
    assert Group.objects.filter(name="team-a").exists()  # groups are left for others
    synced = AuditEntry.objects.filter(action="account.groups_sync", target="alice").first()
    assert synced.details["removed"] == ["reposearch-write", "team-a"]


@pytest.mark.django_db
def test_writes_by_a_proxy_signed_in_user_still_need_the_csrf_token(proxy_settings) -> None:
    client = Client(REMOTE_ADDR=PROXY, enforce_csrf_checks=True)
    headers = {"X-Forwarded-User": "wendy", "X-Forwarded-Groups": "reposearch-write"}
    response = client.post(
        "/api/repos", {"url": "https://example.com/x.git"}, "application/json", headers=headers
    )
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]
    assert not AuditEntry.objects.filter(action="repository.add", outcome="ok").exists()


@pytest.mark.django_db
def test_a_different_user_in_the_header_replaces_the_session_user(proxy_settings) -> None:
    client = Client(REMOTE_ADDR=PROXY)
    client.get("/api/repos", headers={"X-Forwarded-User": "alice"})
    client.get("/api/repos", headers={"X-Forwarded-User": "bob"})
    assert signed_in_user(client).username == "bob"
    # And a request from the proxy without the header ends the header's session.
    client.get("/api/repos")
    assert signed_in_user(client) is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    "address",
    [
        "203.0.113.7",  # anyone on the network
        "127.0.0.1",  # a local process, when only 10.0.0.0/8 is trusted
        "::1",
        "11.0.0.1",  # just outside the range
    ],
)
def test_the_header_from_an_untrusted_address_is_ignored(proxy_settings, address) -> None:
    client = Client(REMOTE_ADDR=address)
    response = client.get(
        "/api/repos",
        headers={
            "X-Forwarded-User": "mallory",
            "X-Forwarded-Groups": "reposearch-admin",
            "X-Forwarded-For": PROXY,  # claiming to have come through the proxy changes nothing
        },
    )
    assert response.status_code == 401
    assert signed_in_user(client) is None
    assert not User.objects.filter(username="mallory").exists()
    assert response.wsgi_request.META["REMOTE_ADDR"] == address


@pytest.mark.django_db
def test_an_untrusted_request_ends_a_session_the_header_started(proxy_settings) -> None:
    client = Client(REMOTE_ADDR=PROXY)
    client.get("/api/repos", headers={"X-Forwarded-User": "alice"})
    client.defaults["REMOTE_ADDR"] = "192.0.2.50"  # the same cookie, straight to the server
    client.get("/api/repos", headers={"X-Forwarded-User": "alice"})
    assert signed_in_user(client) is None


@pytest.mark.django_db
def test_a_deactivated_account_named_by_the_proxy_stays_out(proxy_settings) -> None:
    User.objects.create_user("olga", is_active=False)
    client = Client(REMOTE_ADDR=PROXY)
    response = client.get("/api/repos", headers={"X-Forwarded-User": "olga"})
    assert response.status_code == 401 and signed_in_user(client) is None


@pytest.mark.django_db
def test_nobody_is_trusted_when_the_list_is_empty(proxy_settings) -> None:
    proxy_settings.REPO_SEARCH_TRUSTED_PROXIES = []
    client = Client(REMOTE_ADDR=PROXY)
    client.get("/api/repos", headers={"X-Forwarded-User": "alice"})
    assert signed_in_user(client) is None
    assert not User.objects.filter(username="alice").exists()


@pytest.mark.django_db
def test_the_header_is_off_unless_configured(proxy_settings) -> None:
    proxy_settings.REPO_SEARCH_REMOTE_USER_HEADER = ""
    client = Client(REMOTE_ADDR=PROXY)
    client.get("/api/repos", headers={"X-Forwarded-User": "alice"})
    assert signed_in_user(client) is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("a" * 10_240, "longer than"),
        ("a" * 151, "longer than 150"),
        ("alice\x00admin", "characters other than"),
        ("alice,admin", "characters other than"),
        ("alice admin", "characters other than"),
        ("\xff\xfe", "not valid UTF-8"),  # Latin-1 bytes that are no UTF-8
    ],
)
def test_an_unusable_user_header_from_the_proxy_answers_400(proxy_settings, value, problem) -> None:
    response = Client(REMOTE_ADDR=PROXY).get("/api/repos", HTTP_X_FORWARDED_USER=value)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "bad_identity_header"
    assert "X-Forwarded-User" in error["message"] and problem in error["message"]
    assert value[:20] not in error["message"]  # never echoed
    assert User.objects.count() == 0


@pytest.mark.django_db
def test_an_unusable_header_on_a_page_answers_the_400_page(proxy_settings) -> None:
    response = Client(REMOTE_ADDR=PROXY).get("/", HTTP_X_FORWARDED_USER="a" * 10_240)
    assert response.status_code == 400
    assert b"X-Forwarded-User" in response.content and b"Traceback" not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_user_header_names_nobody(proxy_settings, value) -> None:
    client = Client(REMOTE_ADDR=PROXY)
    response = client.get("/api/repos", HTTP_X_FORWARDED_USER=value)
    assert response.status_code != 400 and signed_in_user(client) is None
    assert User.objects.count() == 0


@pytest.mark.django_db
def test_a_utf8_user_name_from_the_proxy_is_kept_as_sent(proxy_settings) -> None:
    # The proxy sends UTF-8; the server hands Django the bytes decoded as Latin-1.
    raw = "josé".encode().decode("latin-1")
    client = Client(REMOTE_ADDR=PROXY)
    client.get("/api/repos", HTTP_X_FORWARDED_USER=raw)
    assert signed_in_user(client).username == "josé"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("groups", "problem"),
    [
        ("team\x00-a", "control characters"),
        ("g" * 151, "longer than 150"),
        (",".join(f"g{i}" for i in range(201)), "more than 200 groups"),
    ],
)
def test_unusable_groups_from_the_proxy_answer_400(proxy_settings, groups, problem) -> None:
    response = Client(REMOTE_ADDR=PROXY).get(
        "/api/repos", HTTP_X_FORWARDED_USER="alice", HTTP_X_FORWARDED_GROUPS=groups
    )
    assert response.status_code == 400
    assert problem in response.json()["error"]["message"]
    assert not Group.objects.exclude(name__in=["reposearch-write", "reposearch-admin"]).exists()


def test_the_client_is_the_last_hop_that_is_not_a_trusted_proxy(settings) -> None:
    settings.REPO_SEARCH_TRUSTED_PROXIES = ["10.0.0.0/8"]
    # client-written junk, the real client, then two of our proxies
    assert client_address("1.1.1.1, 198.51.100.4, 10.0.0.2", "10.0.0.9") == "198.51.100.4"
    assert client_address("10.0.0.2", "10.0.0.9") == "10.0.0.2"  # only proxies: the first
    assert client_address("not-an-ip, 10.0.0.2", "10.0.0.9") == "10.0.0.2"
    assert client_address("", "10.0.0.9") == "10.0.0.9"


@pytest.mark.django_db
def test_a_trusted_proxy_gives_the_client_address_and_scheme(proxy_settings) -> None:
    response = Client(REMOTE_ADDR=PROXY).get(
        "/api/repos",
        headers={"X-Forwarded-For": "198.51.100.4", "X-Forwarded-Proto": "https"},
    )
    assert response.wsgi_request.META["REMOTE_ADDR"] == "198.51.100.4"
    assert response.wsgi_request.is_secure()
    # From anyone else, neither is believed.
    response = Client(REMOTE_ADDR="192.0.2.1").get(
        "/api/repos",
        headers={"X-Forwarded-For": "198.51.100.4", "X-Forwarded-Proto": "https"},
    )
    assert response.wsgi_request.META["REMOTE_ADDR"] == "192.0.2.1"
    assert not response.wsgi_request.is_secure()


def test_a_user_header_without_trusted_proxies_refuses_to_start() -> None:
    env = {**os.environ, "REPO_SEARCH_REMOTE_USER_HEADER": "X-Forwarded-User"}
    env.pop("REPO_SEARCH_TRUSTED_PROXIES", None)
    result = subprocess.run(
        [sys.executable, "-c", "import reposearch.settings.base"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "REPO_SEARCH_TRUSTED_PROXIES is empty" in result.stderr
    env["REPO_SEARCH_TRUSTED_PROXIES"] = "10.0.0.0/8,not-a-network"
    result = subprocess.run(
        [sys.executable, "-c", "import reposearch.settings.base"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0 and "'not-a-network' is not an IP address" in result.stderr


# --- Through the real web server --------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def uvicorn_behind_a_proxy(transactional_db) -> Iterator[str]:
    """``make up``'s web command, trusting only 127.0.0.2 as its proxy."""
    from reposearch.processes import web_command

    db = connection.settings_dict
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reposearch.settings.test",
        "DATABASE_URL": f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:{db['PORT']}/{db['NAME']}",
        "REPO_SEARCH_TRUSTED_PROXIES": "127.0.0.2",
        "REPO_SEARCH_REMOTE_USER_HEADER": "X-Forwarded-User",
    }
    command = web_command("127.0.0.1", port, 1, program=(sys.executable, "-m", "uvicorn"))
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"uvicorn exited: {process.stderr.read().decode()[-2000:]}")
            try:
                httpx.get(f"{url}/api/repos", timeout=5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(30)


def test_uvicorn_does_not_let_a_local_process_claim_the_proxys_address(
    uvicorn_behind_a_proxy,
) -> None:
    url = uvicorn_behind_a_proxy
    # A local process (127.0.0.1) says it came through the proxy at 127.0.0.2.
    httpx.get(
        f"{url}/api/repos",
        headers={"X-Forwarded-User": "mallory", "X-Forwarded-For": "127.0.0.2"},
        timeout=30,
    )
    assert not User.objects.filter(username="mallory").exists()
    # The proxy itself, connecting from 127.0.0.2, is believed.
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(transport=transport, timeout=30) as proxy:
        response = proxy.get(f"{url}/api/repos", headers={"X-Forwarded-User": "alice"})
        assert response.status_code == 200  # DRF sees her under ASGI too
        assert proxy.get(f"{url}/api/repos").status_code == 401  # header gone: signed out
    assert User.objects.filter(username="alice").exists()
    assert httpx.get(f"{url}/api/repos", timeout=30).status_code == 401
