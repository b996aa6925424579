"""The admin's user pages: Django's user form with the reposearch role, audited.

A user's form shows their reposearch role and sets it through ``accounts.services.roles`` (the
same rules as the People page and ``manage.py role``); its group list holds visibility groups
only. Django's per-user "user permissions" are hidden: reposearch decides what an account may do
from its role, never from Django's model permissions. Only a superuser changes (or sets the
password of, or deletes) a superuser's or another administrator's account; others see it
(``accounts.services.protected_accounts``). Registered by ``accounts.admin``.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from accounts.actors import Actor
from accounts.admin_access import AdministratorsManage
from accounts.admin_audit import AuditedAdmin
from accounts.audit import client_address
from accounts.errors import PeopleRefused
from accounts.roles import (
    ROLE_GROUPS,
    ROLE_NAMES,
    Role,
    keep_staff_in_step,
    role_from_group_names,
)
from accounts.services.protected_accounts import (
    check_may_change,
    check_removal,
    record_refused_account_change,
)
from accounts.services.roles import (
    check_role_change,
    held_role,
    record_refused_role_change,
    set_role,
)
from reposearch.views import error_response

ROLE_HELP = (
    "read: search and ask (every active account). write: also add, re-index and delete "
    "repositories. admin: also models, people, tokens and who sees which repository. "
    "A superuser is an administrator whatever this says."
)


class RoleUserChangeForm(UserChangeForm):  # type: ignore[type-arg]
    """Django's user form with the reposearch role, and groups narrowed to visibility groups."""

    role = forms.ChoiceField(choices=[(name, name) for name in ROLE_NAMES], help_text=ROLE_HELP)
    actor: Actor | None = None  # set per request by ``AuditedUserAdmin.get_form``
    # The role change set_role refused when this form was saved (``RoleRefusedOnSave``).
    refused_on_save: PeopleRefused | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        user = self.instance
        if "groups" in self.fields:
            field = self.fields["groups"]
            field.queryset = field.queryset.exclude(name__in=list(ROLE_GROUPS))  # type: ignore[attr-defined]
            field.help_text = (
                "Visibility groups: a repository restricted to groups is visible to their "
                "members only (and to administrators). The role is set above, not here."
            )
        if "role" in self.fields and user.pk is not None:
            role = self.fields["role"]  # this form's own copy: changing it changes no other
            role.initial = held_role(user).label
            if user.is_superuser:
                role.disabled = True
                role.help_text = (
                    "A superuser is always an administrator: clear 'Superuser status' to give "
                    "a smaller role."
                )
            elif self.actor is None or self.actor.role != Role.ADMIN:
                role.disabled = True
                role.help_text = "Only administrators give roles. " + ROLE_HELP

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        role = data.get("role")
        if self.refused_on_save is not None:
            self.add_error("role", self.refused_on_save.message)  # recorded when refused
        elif role and self.actor is not None and "role" in self.changed_data:
            try:
                check_role_change(self.actor, self.instance, Role.parse(role))
            except PeopleRefused as error:
                record_refused_role_change(self.actor, self.instance, role, error)
                self.add_error("role", error.message)
        if (
            self.actor is not None
            and "is_active" in self.changed_data
            and not data.get("is_active", True)
        ):
            try:
                check_removal(self.actor, self.instance, "deactivate")
            except PeopleRefused as error:
                record_refused_account_change(self.actor, self.instance, "change", error)
                self.add_error("is_active", error.message)
        return data


class RoleRefusedOnSave(Exception):
    """The role change the form's check let through and ``set_role`` refused when the form was
    saved (what it checks changed in between). Raised out of the admin's transaction, which it
    rolls back whole, together with the refusal's audit row that ``set_role`` wrote in it."""

    def __init__(self, wanted: str, error: PeopleRefused) -> None:
        super().__init__(error.message)
        self.wanted = wanted
        self.error = error


def admin_actor(request: HttpRequest) -> Actor:
    return Actor(user=request.user, address=client_address(request), via="admin")


class AuditedUserAdmin(AdministratorsManage, AuditedAdmin, UserAdmin):  # type: ignore[type-arg]
    form = RoleUserChangeForm
    fieldsets = (
        (None, {"fields": ("username", "password")}),
        ("Personal info", {"fields": ("first_name", "last_name", "email")}),
        (
            "Role and access",
            {
                "fields": ("is_active", "role", "groups", "is_staff", "is_superuser"),
                "description": (
                    "What this account may do in reposearch comes from its role; which "
                    "restricted repositories it sees, from its visibility groups. Django's "
                    "per-model permissions are not used by reposearch and are not shown. "
                    "'Staff status' opens this admin site: giving the admin role sets it and "
                    "taking the role away clears it; administrators use every page here. Only "
                    "a superuser makes another superuser, and changes a superuser's or another "
                    "administrator's account."
                ),
            },
        ),
        ("Important dates", {"fields": ("last_login", "date_joined")}),
    )
    list_display = ("username", "role", "is_active", "is_staff", "is_superuser", "last_login")
    list_filter = ("is_active", "is_superuser", "groups")

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is None:
            return form  # the add form: user name and password; the role is set after
        refused = getattr(request, "reposearch_role_refused", None)
        attributes = {"actor": admin_actor(request), "refused_on_save": refused}
        return type(form.__name__, (form,), attributes)

    def get_queryset(self, request: HttpRequest) -> QuerySet[User]:
        return super().get_queryset(request).prefetch_related("groups")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        if not getattr(request.user, "is_superuser", False):
            # An administrator makes nobody a superuser, and 'Staff status' follows the role:
            # ticked for someone else, it would open the admin to Django's model permissions.
            fields += ("is_superuser", "is_staff")
        return fields

    def refusal(self, request: HttpRequest, user: Any, verb: str) -> PeopleRefused | None:
        """Why the signed-in account may not ``verb`` (change, password, delete) ``user``'s
        record, though its role or permissions let it change accounts; ``None`` if it may."""
        try:
            if verb == "delete":
                check_removal(admin_actor(request), user, "delete")
            else:
                check_may_change(admin_actor(request), user)
        except PeopleRefused as error:
            return error
        return None

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and self.refusal(request, obj, "change") is not None:
            return False  # the page shows the record without a form
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and self.refusal(request, obj, "delete") is not None:
            return False
        return super().has_delete_permission(request, obj)

    def refused_page(self, request: HttpRequest, object_id: str, verb: str) -> HttpResponse | None:
        """The 403 page saying why ``verb`` is refused on this account (the refusal audited when
        it was posted), or ``None`` to go on. Someone who may not change (or delete) accounts at
        all gets Django's plain 403 as before."""
        user = self.get_object(request, unquote(object_id))
        allowed = self.has_delete_permission if verb == "delete" else self.has_change_permission
        if user is None or not allowed(request):
            return None
        error = self.refusal(request, user, verb)
        if error is None:
            return None
        if request.method == "POST":
            record_refused_account_change(admin_actor(request), user, verb, error)
        return error_response(request, 403, "permission_denied", error.message)

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: Any = None,
    ) -> HttpResponse:
        if object_id is not None and request.method == "POST":
            refused = self.refused_page(request, object_id, "change")
            if refused is not None:
                return refused
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except RoleRefusedOnSave as refusal:
            # The save is rolled back; the refusal's row is written now, outside it, and the
            # form shown again with the reason (as when the form's own check refuses).
            user = self.get_object(request, unquote(str(object_id)))
            record_refused_role_change(admin_actor(request), user, refusal.wanted, refusal.error)
            request.reposearch_role_refused = refusal.error  # type: ignore[attr-defined]
            return super().changeform_view(request, object_id, form_url, extra_context)

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> Any:
        # Django's own view asks has_change_permission only, and answers a bare 403.
        refused = self.refused_page(request, id, "password")
        if refused is not None:
            return refused
        return super().user_change_password(request, id, form_url)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: Any = None
    ) -> HttpResponse:
        refused = self.refused_page(request, object_id, "delete")
        if refused is not None:
            return refused
        return super().delete_view(request, object_id, extra_context)

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # one at a time, each checked above
        return actions

    @admin.display(description="role")
    def role(self, user: User) -> str:
        names = {group.name for group in user.groups.all()}
        return role_from_group_names(names, is_superuser=user.is_superuser).label

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # What the account was before this save: the form has set the new values on ``obj``.
        before = User.objects.filter(pk=obj.pk).first() if change else None
        form.was_admin = before is not None and held_role(before) == Role.ADMIN
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        user = form.instance
        role_groups = list(user.groups.filter(name__in=list(ROLE_GROUPS)))
        super().save_related(request, form, formsets, change)
        # The form's group list leaves the role groups out: saving it took them away.
        user.groups.add(*role_groups)
        if hasattr(user, "_reposearch_role"):
            del user._reposearch_role
        role = form.cleaned_data.get("role")
        if change and role and "role" in form.changed_data and not form.fields["role"].disabled:
            try:
                set_role(form.actor, user, Role.parse(role))
            except PeopleRefused as error:
                raise RoleRefusedOnSave(role, error) from error
        # An administrator keeps 'Staff status'; one who stopped being one (a superuser no
        # more) loses it.
        keep_staff_in_step(user, was_admin=getattr(form, "was_admin", False))
