"""Accounts for tests: users of each role, their API tokens and clients that send them.

Every test that talks to the API or the UI authenticates as one of these; anonymous requests
are for the tests that check they are refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from rest_framework.test import APIClient

from accounts.roles import Role, grant_role
from accounts.tokens import create_token


def make_account(
    role: str = "read", *, username: str | None = None, groups: Iterable[str] = ()
) -> Any:
    """A new active user holding ``role`` and belonging to ``groups`` (created as needed)."""
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(
        username or f"{role}-{uuid.uuid4().hex[:8]}", password="correct horse battery staple"
    )
    grant_role(user, Role.parse(role))
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


def token_for(user: Any, scope: str | None = None, name: str = "tests") -> str:
    """A fresh API token secret of ``user`` (scope: the user's role)."""
    from accounts.roles import role_of

    held = role_of(user)
    return create_token(user, name, scope or (held.label if held else "read")).secret


def bearer(secret: str) -> dict[str, str]:
    """Request headers (for urllib / httpx) that send ``secret``."""
    return {"Authorization": f"Bearer {secret}"}


def token_client(role: str = "admin", *, user: Any = None, scope: str | None = None) -> APIClient:
    """An ``APIClient`` that sends a token of a new ``role`` account (or of ``user``)."""
    user = user or make_account(role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_for(user, scope)}")
    client.user = user  # type: ignore[attr-defined]
    return client


def session_client(role: str = "admin", *, user: Any = None) -> Any:
    """Django's test ``Client`` signed in (a session, as the UI has) as a new ``role`` account."""
    from django.test import Client

    client = Client()
    client.force_login(user or make_account(role))
    return client
