"""Who may open the UI's pages: readers (an account, or anyone with anonymous read on) and
accounts only; the HTML fragments answer 401 rather than redirect, since scripts fetch them.

The API decides for itself what each role may do; these only keep pages from showing to
visitors who could not use them, and ``may`` tells templates which controls to offer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse

from accounts.roles import Role, role_of

View = Callable[..., HttpResponse]


def anonymous_read() -> bool:
    return bool(settings.REPO_SEARCH_ANONYMOUS_READ)


def may_read(request: HttpRequest) -> bool:
    return bool(request.user.is_authenticated) or anonymous_read()


def may(user: Any, role: str) -> bool:
    """Whether ``user`` holds ``role`` (``read``, ``write`` or ``admin``) or more."""
    held = role_of(user)
    return held is not None and held >= Role.parse(role)


def reader_page(view: View) -> View:
    """A read page: signed in, or anonymous read on; else to the sign-in page and back."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if may_read(request):
            return view(request, *args, **kwargs)
        return redirect_to_login(request.get_full_path())

    return guarded


def reader_fragment(view: View) -> View:
    """An HTML fragment scripts fetch: 401 (not a redirect to a page) when nobody may read."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if may_read(request):
            return view(request, *args, **kwargs)
        return HttpResponse(
            "Sign in to see results: your session has ended.",
            status=401,
            content_type="text/plain; charset=utf-8",
        )

    return guarded


account_page = login_required  # pages about one's own account or settings: never anonymous
