"""OpenID Connect sign-in against a real provider: django-oauth-toolkit in a second process.

Each test drives the authorization-code flow (with PKCE) as a browser would, with an httpx
client: reposearch's ``/oidc/authenticate/`` sends it to the provider, it signs in there with a
password, consents, and is sent back to reposearch's callback on the live server, which fetches
the tokens from the provider, checks the ID token's RS256 signature against the provider's JWKS
and signs the user in. Nothing on either side is imitated.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx
import pytest
from django.contrib.auth.models import User

from accounts.identity.oidc_provider import forget_discovery
from accounts.models import AuditEntry
from accounts.roles import Role, role_of
from tests.oidc_provider.process import IdentityProvider, _free_port

PASSWORD = "idp password 1"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def idp(live_server) -> Iterator[IdentityProvider]:
    provider = IdentityProvider(f"{live_server.url}/oidc/callback/").start()
    yield provider
    provider.stop()


def use_provider(settings, provider: IdentityProvider, **overrides: str) -> None:
    forget_discovery()
    settings.REPO_SEARCH_OIDC_ENABLED = True
    settings.REPO_SEARCH_OIDC_ISSUER = provider.issuer
    settings.OIDC_RP_CLIENT_ID = provider.client_id
    settings.OIDC_RP_CLIENT_SECRET = provider.client_secret
    settings.OIDC_RP_SCOPES = "openid email profile groups"
    for name in ("AUTHORIZATION", "TOKEN", "USER", "JWKS"):
        setattr(settings, f"OIDC_OP_{name}_ENDPOINT", "")
    for name, value in overrides.items():
        setattr(settings, name, value)


@pytest.fixture
def oidc(settings, idp) -> Iterator[IdentityProvider]:
    use_provider(settings, idp)
    yield idp
    forget_discovery()


@dataclass
class Browser:
    """An httpx client that follows redirects by hand, so each step can be looked at."""

    client: httpx.Client
    site: str

    def get(self, url: str) -> httpx.Response:
        return self.client.get(url)

    def follow(self, response: httpx.Response) -> httpx.Response:
        assert response.status_code in (301, 302, 303), (response.status_code, response.text[:500])
        return self.client.get(response.url.join(response.headers["location"]))

    def submit(self, page: httpx.Response, **fields: str) -> httpx.Response:
        """POST the page's form: its hidden inputs and CSRF token, plus ``fields``."""
        data = {
            html.unescape(name): html.unescape(value)
            for name, value in re.findall(
                r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text
            )
        }
        data.update(fields)
        return self.client.post(page.url, data=data)

    def api_status(self, path: str = "/api/repos") -> int:
        return self.client.get(f"{self.site}{path}").status_code


@pytest.fixture
def browser(live_server) -> Iterator[Browser]:
    with httpx.Client(timeout=60, follow_redirects=False) as client:
        yield Browser(client, live_server.url)


def to_provider_consent(
    browser: Browser, username: str, password: str = PASSWORD
) -> httpx.Response:
    """From reposearch's sign-in link to the provider's consent page (signed in there)."""
    start = browser.get(f"{browser.site}/oidc/authenticate/?next=/api/repos")
    authorize = browser.follow(start)  # the provider sends an anonymous visitor to its sign-in
    assert authorize.status_code == 302 and "/accounts/login/" in authorize.headers["location"]
    login_page = browser.follow(authorize)
    signed_in = browser.submit(login_page, username=username, password=password)
    consent = browser.follow(signed_in)
    assert consent.status_code == 200 and 'name="allow"' in consent.text, consent.text[:500]
    return consent


def to_callback(browser: Browser, username: str) -> httpx.Response:
    """The provider's redirect back to reposearch (not followed yet), after consenting."""
    consent = to_provider_consent(browser, username)
    back = browser.submit(consent, allow="Authorize")
    assert back.status_code == 302, back.text[:500]
    assert back.headers["location"].startswith(f"{browser.site}/oidc/callback/?")
    return back


def sign_in(browser: Browser, username: str) -> httpx.Response:
    return browser.follow(to_callback(browser, username))


def group_names(username: str) -> set[str]:
    return set(User.objects.get(username=username).groups.values_list("name", flat=True))


def test_sign_in_creates_the_account_with_the_providers_groups_and_a_second_one_updates_them(
    oidc, browser, live_server
) -> None:
    oidc.set_user("alice", PASSWORD, ["team-a", "reposearch-admin"])
    assert browser.api_status() == 401  # not signed in yet
    done = sign_in(browser, "alice")
    assert done.status_code == 302 and done.headers["location"] == "/api/repos"
    alice = User.objects.get(username="alice")
    assert alice.email == "alice@idp.test" and not alice.has_usable_password()
    assert group_names("alice") == {"team-a", "reposearch-admin"}
    assert role_of(alice) == Role.ADMIN  # the IdP's reposearch-admin group makes an admin
    assert browser.api_status() == 200  # the session reaches the API
    assert browser.api_status("/api/audit") == 200  # and she is an administrator there
    created = AuditEntry.objects.get(action="account.create", target="alice")
    assert created.details == {"source": "oidc"}

    # The provider drops her from the admins; at her next sign-in she is an admin no longer.
    oidc.set_user("alice", PASSWORD, ["team-a"])
    with httpx.Client(timeout=60, follow_redirects=False) as client:
        later = Browser(client, live_server.url)
        assert sign_in(later, "alice").status_code == 302
        assert later.api_status() == 200
        assert later.api_status("/api/audit") == 403
    assert group_names("alice") == {"team-a"}
    assert role_of(User.objects.get(username="alice")) == Role.READ
    assert User.objects.filter(username="alice").count() == 1
    synced = AuditEntry.objects.filter(action="account.groups_sync", target="alice").first()
    assert synced.details["removed"] == ["reposearch-admin"]


def test_a_state_that_was_not_issued_to_this_browser_is_refused(oidc, browser) -> None:
    oidc.set_user("bob", PASSWORD, ["reposearch-write"])
    back = to_callback(browser, "bob")
    parts = urlsplit(back.headers["location"])
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    query["state"] = "forged" + query["state"][6:]
    forged = browser.get(urlunsplit(parts._replace(query=urlencode(query))))
    assert forged.status_code == 400
    assert "state does not match" in forged.text and "Start again" in forged.text
    assert not User.objects.filter(username="bob").exists()
    assert browser.api_status() == 401


def test_a_code_the_provider_did_not_issue_is_refused_by_it(oidc, browser) -> None:
    oidc.set_user("kim", PASSWORD, [])
    back = to_callback(browser, "kim")
    parts = urlsplit(back.headers["location"])
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    query["code"] = "not-a-code-the-provider-issued"
    page = browser.get(urlunsplit(parts._replace(query=urlencode(query))))
    assert page.status_code == 400
    assert "refused to complete this sign-in (status 400)" in page.text
    assert not User.objects.filter(username="kim").exists()


def test_a_callback_in_a_browser_that_never_started_a_sign_in_is_refused(
    oidc, browser, live_server
) -> None:
    oidc.set_user("carol", PASSWORD, [])
    back = to_callback(browser, "carol")
    with httpx.Client(timeout=60) as stranger:  # someone else's browser, handed the link
        answer = stranger.get(back.headers["location"])
    assert answer.status_code == 400 and "was not started here" in answer.text
    assert not User.objects.filter(username="carol").exists()


def test_declining_at_the_provider_says_so(oidc, browser) -> None:
    oidc.set_user("dave", PASSWORD, [])
    consent = to_provider_consent(browser, "dave")
    declined = browser.submit(consent)  # "Cancel": the form without "allow"
    assert "error=access_denied" in declined.headers["location"]
    page = browser.follow(declined)
    assert page.status_code == 403 and "did not sign you in (access_denied)" in page.text
    assert not User.objects.filter(username="dave").exists()


def test_a_local_password_account_is_not_taken_over_by_a_provider_user(oidc, browser) -> None:
    User.objects.create_superuser("admin", password="local admin password")
    oidc.set_user("admin", PASSWORD, [])
    page = sign_in(browser, "admin")
    assert page.status_code == 403 and "signs in with a password" in page.text
    assert browser.api_status() == 401  # not signed in as the local admin
    assert not User.objects.get(username="admin").groups.exists()


def test_a_deactivated_account_is_told_so(oidc, browser) -> None:
    User.objects.create_user("henry", is_active=False)  # no password: a provider account
    oidc.set_user("henry", PASSWORD, ["reposearch-admin"])
    page = sign_in(browser, "henry")
    assert page.status_code == 403 and "is deactivated here" in page.text
    assert browser.api_status() == 401
    assert not User.objects.get(username="henry").groups.exists()


def test_endpoints_set_without_discovery_work_too(settings, oidc, browser) -> None:
    settings.REPO_SEARCH_OIDC_ISSUER = ""  # a provider without a discovery document
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{oidc.issuer}/authorize/"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{oidc.issuer}/token/"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{oidc.issuer}/.well-known/jwks.json"
    settings.OIDC_OP_USER_ENDPOINT = ""  # the ID token's claims alone
    oidc.set_user("ivy", PASSWORD, ["reposearch-write"])
    assert sign_in(browser, "ivy").status_code == 302
    assert group_names("ivy") == {"reposearch-write"}
    assert browser.api_status() == 200


def test_a_provider_that_is_down_gives_a_clear_page(settings, idp, browser) -> None:
    use_provider(settings, idp, REPO_SEARCH_OIDC_ISSUER=f"http://127.0.0.1:{_free_port()}/o")
    page = browser.get(f"{browser.site}/oidc/authenticate/")
    assert page.status_code == 502
    assert "could not be reached" in page.text and "Traceback" not in page.text


def test_a_provider_that_goes_down_during_the_sign_in_gives_a_clear_page(
    settings, live_server, browser
) -> None:
    provider = IdentityProvider(f"{live_server.url}/oidc/callback/").start()
    try:
        use_provider(settings, provider)
        provider.set_user("erin", PASSWORD, [])
        back = to_callback(browser, "erin")
    finally:
        provider.stop()
    page = browser.follow(back)  # reposearch now asks a provider that is gone for the tokens
    assert page.status_code == 502 and "could not be reached" in page.text
    assert not User.objects.filter(username="erin").exists()


def test_an_id_token_signed_by_another_key_is_refused(settings, idp, live_server, browser) -> None:
    # Another provider (its own RSA key) issues the tokens; the keys trusted are idp's.
    impostor = IdentityProvider(f"{live_server.url}/oidc/callback/").start()
    try:
        use_provider(
            settings, impostor, OIDC_OP_JWKS_ENDPOINT=f"{idp.issuer}/.well-known/jwks.json"
        )
        impostor.set_user("frank", PASSWORD, ["reposearch-admin"])
        page = sign_in(browser, "frank")
    finally:
        impostor.stop()
    assert page.status_code == 400
    assert "not signed by a key the identity provider publishes" in page.text
    assert not User.objects.filter(username="frank").exists()
    assert browser.api_status() == 401


def test_the_sign_in_pages_are_absent_without_configuration(settings, browser) -> None:
    settings.REPO_SEARCH_OIDC_ENABLED = False
    assert browser.get(f"{browser.site}/oidc/authenticate/").status_code == 404
    assert browser.get(f"{browser.site}/oidc/callback/?code=x&state=y").status_code == 404


def test_without_a_groups_claim_the_groups_set_here_are_kept(settings, oidc, browser) -> None:
    settings.REPO_SEARCH_OIDC_GROUPS_CLAIM = ""  # REPO_SEARCH_OIDC_GROUPS_CLAIM=- (e.g. Google)
    grace = User.objects.create_user("grace")  # no password: signs in through the provider
    grace.groups.create(name="team-b")
    oidc.set_user("grace", PASSWORD, ["reposearch-admin"])
    assert sign_in(browser, "grace").status_code == 302
    assert group_names("grace") == {"team-b"}
    assert role_of(User.objects.get(username="grace")) == Role.READ
    assert User.objects.get(username="grace").email == "grace@idp.test"


def test_half_a_configuration_refuses_to_start() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPO_SEARCH_OIDC_")}
    env["REPO_SEARCH_OIDC_CLIENT_ID"] = "reposearch"  # no issuer, no secret
    result = subprocess.run(
        [sys.executable, "-c", "import reposearch.settings.base"],
        cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "OpenID Connect is half configured" in result.stderr
