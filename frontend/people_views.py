"""The People page (``/people/``): administrators see every account with its role, visibility
groups and tokens, and change them.

Plain HTML forms, no script: each change is a POST that calls one ``accounts.services`` function
(the ones ``manage.py role``, ``visibility_group``, ``createtoken`` and ``revoketoken`` call),
then sends the browser back with a message (post/redirect/get). A new token's secret is the one
exception: it is rendered once in the answer to the POST that made it, never stored, never in a
URL, and that answer is not cached. Other accounts get 403.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from accounts.actors import Actor
from accounts.errors import PeopleRefused
from accounts.models import ApiToken, AuditOutcome
from accounts.roles import ROLE_NAMES, Role
from accounts.selectors import people, person, visibility_groups
from accounts.services.account_tokens import create_token_for, revoke_token_for
from accounts.services.roles import MESSAGE_LENGTH, set_role
from accounts.services.visibility_groups import (
    add_to_group,
    create_visibility_group,
    remove_from_group,
)
from accounts.tokens import MAX_EXPIRY_DAYS
from frontend.access import account_page, may
from reposearch.views import error_response

VIA = "people page"
TYPED_LENGTH = 100  # of what a refused form sent (a group or token name), in its audit row


def admin_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed in (else to the sign-in page) and an administrator (else 403)."""

    @wraps(view)
    @account_page
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not may(request.user, "admin"):
            return error_response(
                request, 403, "permission_denied", "People and roles are for administrators."
            )
        return view(request, *args, **kwargs)

    return guarded


def _account(user_id: int) -> Any:
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        raise Http404("no such account")
    return user


def _back(request: HttpRequest, user: Any = None) -> HttpResponseRedirect:
    """To the person's page, or to the list when the form came from it."""
    if user is None or request.POST.get("back") == "people":
        return HttpResponseRedirect(reverse("frontend:people"), status=303)  # type: ignore[return-value]
    return HttpResponseRedirect(reverse("frontend:person", args=[user.pk]), status=303)  # type: ignore[return-value]


def _refused(
    request: HttpRequest,
    error: PeopleRefused,
    action: str = "",
    target: str = "",
    details: dict[str, str] | None = None,
) -> None:
    """The refusal shown on the page, and recorded as ``action`` with outcome refused (a role
    change's row is ``set_role``'s own); what the form sent is cut to a readable length."""
    messages.error(request, error.message)
    if action:
        kept = {key: value[:TYPED_LENGTH] for key, value in (details or {}).items()}
        kept.update(error=error.code, message=error.message[:MESSAGE_LENGTH])
        Actor.of_request(request, VIA).record(
            action, target[:TYPED_LENGTH], kept, outcome=AuditOutcome.REFUSED
        )


@require_GET
@admin_page
def people_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "frontend/people.html",
        {
            "page": "people",
            "people": people(),
            "groups": visibility_groups(),
            "roles": ROLE_NAMES,
            "groups_from_sign_in": _groups_from_sign_in(),
        },
    )


def _groups_from_sign_in() -> str:
    """The identity source that replaces accounts' groups at each sign-in, if one does."""
    if settings.REPO_SEARCH_OIDC_ENABLED and settings.REPO_SEARCH_OIDC_GROUPS_CLAIM:
        return "single sign-on (REPO_SEARCH_OIDC_GROUPS_CLAIM)"
    if settings.REPO_SEARCH_REMOTE_USER_HEADER and settings.REPO_SEARCH_REMOTE_GROUPS_HEADER:
        return "the reverse proxy (REPO_SEARCH_REMOTE_GROUPS_HEADER)"
    return ""


def _person_context(request: HttpRequest, user: Any) -> dict[str, Any]:
    shown = person(user)
    all_groups = [group.name for group in visibility_groups()]
    return {
        "page": "people",
        "person": shown,
        "roles": ROLE_NAMES,
        # A token never exceeds its owner's role: offer only the scopes up to it.
        "scopes": [name for name in ROLE_NAMES if Role.parse(name) <= shown.role],
        "other_groups": [name for name in all_groups if name not in shown.groups],
        "tokens": ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at"),
        "max_expiry_days": MAX_EXPIRY_DAYS,
        "groups_from_sign_in": _groups_from_sign_in(),
    }


@require_GET
@admin_page
def person_page(request: HttpRequest, user_id: int) -> HttpResponse:
    return render(request, "frontend/person.html", _person_context(request, _account(user_id)))


@require_POST
@admin_page
def person_role(request: HttpRequest, user_id: int) -> HttpResponse:
    user = _account(user_id)
    try:
        change = set_role(Actor.of_request(request, VIA), user, request.POST.get("role", ""))
    except PeopleRefused as error:
        _refused(request, error)
    else:
        if change.changed:
            messages.success(
                request, f"{change.username}: {change.before.label} → {change.after.label}."
            )
        else:
            messages.info(request, f"{change.username} is {change.after.label} already.")
    return _back(request, user)


@require_POST
@admin_page
def person_groups(request: HttpRequest, user_id: int) -> HttpResponse:
    user = _account(user_id)
    adding = request.POST.get("action") == "add"
    change_membership = add_to_group if adding else remove_from_group
    try:
        change = change_membership(
            Actor.of_request(request, VIA), request.POST.get("group", ""), user
        )
    except PeopleRefused as error:
        action = "group.add_member" if adding else "group.remove_member"
        group = request.POST.get("group", "")
        _refused(request, error, action, group, {"user": user.get_username()})
    else:
        verb = "added to" if adding else "removed from"
        messages.success(request, f"{change.username} {verb} {change.group}.")
    return _back(request, user)


@require_POST
@admin_page
def create_group(request: HttpRequest) -> HttpResponse:
    try:
        group = create_visibility_group(
            Actor.of_request(request, VIA), request.POST.get("name", "")
        )
    except PeopleRefused as error:
        _refused(request, error, "group.create", request.POST.get("name", ""))
    else:
        messages.success(
            request,
            f"Created the visibility group {group.name}. Add people to it from their page; "
            "an administrator restricts a repository to it in the admin or the API.",
        )
    return _back(request)


def _expiry(raw: str) -> int | None:
    raw = raw.strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise PeopleRefused(f"expires after: a whole number of days from 1 to {MAX_EXPIRY_DAYS}")
    return int(raw)


@never_cache
@require_POST
@admin_page
def person_token_create(request: HttpRequest, user_id: int) -> HttpResponse:
    user = _account(user_id)
    try:
        made = create_token_for(
            Actor.of_request(request, VIA),
            user,
            request.POST.get("name", ""),
            request.POST.get("scope", "read"),
            _expiry(request.POST.get("expires_in_days", "")),
        )
    except PeopleRefused as error:
        details = {"owner": user.get_username(), "name": request.POST.get("name", "")}
        _refused(request, error, "token.create", "", details)
        return _back(request, user)
    context = _person_context(request, user)
    context["new_token"] = made
    return render(request, "frontend/person.html", context)


@require_POST
@admin_page
def person_token_revoke(request: HttpRequest, user_id: int, token_id: int) -> HttpResponse:
    user = _account(user_id)
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise Http404("no such token")
    try:
        revoked = revoke_token_for(Actor.of_request(request, VIA), token)
    except PeopleRefused as error:
        details = {"owner": user.get_username(), "name": token.name}
        _refused(request, error, "token.revoke", str(token.pk), details)
    else:
        if revoked:
            messages.success(request, f"Revoked {token.name} of {user.get_username()}.")
        else:
            messages.info(request, f"{token.name} was revoked already.")
    return _back(request, user)
