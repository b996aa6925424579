"""Signed-in clients for the UI's tests: Django's test client, DRF's, and a browser's session.

Pages other than sign-in need an account, so every UI test acts as one (an administrator unless
it is about what a smaller role sees). The browser gets the session of a ``force_login``; the
sign-in page itself is driven for real in ``test_sign_in_browser.py``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.test import Client
from rest_framework.test import APIClient
from selenium.webdriver.remote.webdriver import WebDriver

from tests.accounts_support import make_account

PASSWORD = "correct horse battery staple"  # make_account's
# Readable names for the browser's accounts: they show in the header of the README's pictures.
BROWSER_NAMES = {"read": "robin", "write": "wren", "admin": "ada"}


def ui_client(role: str = "admin", *, user: Any = None) -> Client:
    client = Client()
    client.force_login(user or make_account(role))
    return client


def api_client(role: str = "admin", *, user: Any = None) -> APIClient:
    client = APIClient()
    client.force_authenticate(user or make_account(role))
    return client


def sign_in_browser(
    driver: WebDriver, base_url: str, role: str = "admin", *, user: Any = None
) -> Any:
    """Gives ``driver`` the session cookie of a new ``role`` account (or of ``user``)."""
    user = user or make_account(role, username=BROWSER_NAMES.get(role))
    client = Client()
    client.force_login(user)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    driver.get(f"{base_url}/sign-in")  # a page of the site, so the cookie belongs to it
    driver.delete_all_cookies()
    driver.add_cookie({"name": settings.SESSION_COOKIE_NAME, "value": session, "path": "/"})
    return user
