"""Admin pages of accounts: users and groups (audited), API tokens (revocable, never shown) and
the audit log (read-only: nobody adds, changes or deletes an entry here).

Administrators (the ``admin`` role) use every page here (``accounts.admin_access``); only a
superuser makes another. A user's form shows their reposearch role and sets it through
``accounts.services.roles`` (the same rules as the People page and ``manage.py role``); its group
list holds visibility groups only. Django's per-user "user permissions" are hidden: reposearch decides what an account may
do from its role, never from Django's model permissions. Role groups cannot be renamed or
deleted here, nor can a group that restricts repositories (deleting it would open them to
every account); trying to says which, and what to do instead (``kept_because``).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from accounts.actors import Actor
from accounts.admin_access import AdministratorsManage
from accounts.admin_audit import AuditedAdmin
from accounts.audit import client_address, record
from accounts.errors import PeopleRefused
from accounts.models import ApiToken, AuditEntry
from accounts.roles import (
    ROLE_GROUPS,
    ROLE_NAMES,
    Role,
    is_role_group,
    keep_staff_in_step,
    role_from_group_names,
)
from accounts.services.roles import (
    check_role_change,
    held_role,
    record_refused_role_change,
    set_role,
)
from accounts.tokens import revoke_token
from reposearch.views import error_response

ROLE_HELP = (
    "read: search and ask (every active account). write: also add, re-index and delete "
    "repositories. admin: also models, people, tokens and who sees which repository. "
    "A superuser is an administrator whatever this says."
)

admin.site.unregister(User)
admin.site.unregister(Group)


class RoleUserChangeForm(UserChangeForm):  # type: ignore[type-arg]
    """Django's user form with the reposearch role, and groups narrowed to visibility groups."""

    role = forms.ChoiceField(choices=[(name, name) for name in ROLE_NAMES], help_text=ROLE_HELP)
    actor: Actor | None = None  # set per request by ``AuditedUserAdmin.get_form``

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
        if role and self.actor is not None and "role" in self.changed_data:
            try:
                check_role_change(self.actor, self.instance, Role.parse(role))
            except PeopleRefused as error:
                record_refused_role_change(self.actor, self.instance, role, error)
                self.add_error("role", error.message)
        return data


@admin.register(User)
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
                    "a superuser makes another superuser."
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
        actor = Actor(user=request.user, address=client_address(request), via="admin")
        return type(form.__name__, (form,), {"actor": actor})

    def get_queryset(self, request: HttpRequest) -> QuerySet[User]:
        return super().get_queryset(request).prefetch_related("groups")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        if not getattr(request.user, "is_superuser", False):
            fields += ("is_superuser",)  # an administrator cannot make anyone a superuser
        return fields

    @admin.display(description="role")
    def role(self, user: User) -> str:
        names = {group.name for group in user.groups.all()}
        return role_from_group_names(names, is_superuser=user.is_superuser).label

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
            set_role(form.actor, user, Role.parse(role))
        keep_staff_in_step(user, was_admin=False)  # an administrator keeps 'Staff status'


RESTRICTED_NAMES_SHOWN = 5


def kept_because(group: Group) -> str | None:
    """Why ``group`` cannot be deleted, and what to do instead; ``None`` when it can be."""
    if is_role_group(group.name):
        return (
            f"{group.name} grants the {ROLE_GROUPS[group.name].label} role, so it cannot be "
            "deleted or renamed. To take the role from someone, give them another role on the "
            f"People page ({reverse('frontend:people')}), in their user form here, or with "
            "'manage.py role revoke USER'."
        )
    names = list(group.visible_repositories.order_by("name").values_list("name", flat=True))
    if not names:
        return None
    shown = ", ".join(names[:RESTRICTED_NAMES_SHOWN])
    if len(names) > RESTRICTED_NAMES_SHOWN:
        shown += f" and {len(names) - RESTRICTED_NAMES_SHOWN} more"
    count = f"{len(names)} repositor{'y' if len(names) == 1 else 'ies'}"
    return (
        f"{group.name} restricts {count} ({shown}): deleting it would let every account see "
        f"them. Take {group.name} off their visibility groups first, in each repository's form "
        f"here ({reverse('admin:indexing_repository_changelist')}) or with "
        "PATCH /api/repos/{id} and visibility_groups, then delete it."
    )


@admin.register(Group)
class AuditedGroupAdmin(AdministratorsManage, AuditedAdmin, GroupAdmin):
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None and is_role_group(obj.name):
            return ("name",)  # the name is what grants the role
        return ()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and (is_role_group(obj.name) or obj.visible_repositories.exists()):
            return False  # a role, or repositories that would open to every account
        return super().has_delete_permission(request, obj)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: Any = None
    ) -> HttpResponse:
        """Refused with the reason to someone who may delete groups (a bare 403 otherwise)."""
        group = self.get_object(request, unquote(object_id))
        reason = kept_because(group) if group is not None else None
        if reason and self.has_delete_permission(request):
            return error_response(request, 403, "permission_denied", reason)
        return super().delete_view(request, object_id, extra_context)

    def get_actions(self, request: HttpRequest) -> Any:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # one at a time, each checked above
        return actions


@admin.register(ApiToken)
class ApiTokenAdmin(AdministratorsManage, admin.ModelAdmin):
    list_display = ("name", "user", "scope", "prefix", "created_at", "expires_at",
                    "last_used_at", "revoked_at")  # fmt: skip
    list_filter = ("scope",)
    search_fields = ("name", "user__username", "prefix")
    readonly_fields = ("user", "name", "scope", "prefix", "created_at", "expires_at",
                       "last_used_at", "revoked_at", "parent")  # fmt: skip
    exclude = ("digest",)
    actions = ["revoke_selected"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # secrets are made on the Tokens page, the API or manage.py createtoken

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked tokens stay listed; revoke instead

    @admin.action(description="Revoke the selected tokens")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = 0
        for token in queryset.filter(revoked_at__isnull=True):
            token.refresh_from_db(fields=["revoked_at"])
            if token.revoked_at is not None:
                continue  # revoked above, with its parent
            details: dict[str, Any] = {"name": token.name, "owner": token.user.username}
            children = revoke_token(token)
            if children:
                details["revoked_with_it"] = children
            record(
                "token.revoke",
                user=request.user,
                address=client_address(request),
                target=str(token.pk),
                details={**details, "via": "admin"},
            )
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(AuditEntry)
class AuditEntryAdmin(AdministratorsManage, admin.ModelAdmin):
    list_display = ("at", "actor", "token_name", "action", "target", "address", "outcome")
    list_filter = ("outcome", "action")
    search_fields = ("actor", "action", "target")
    date_hierarchy = "at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
