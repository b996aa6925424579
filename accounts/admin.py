"""Admin pages of accounts: users (``accounts.admin_users``) and groups, audited; API tokens
(revocable, never shown) and the audit log (read-only: nobody adds, changes or deletes an entry
here).

Administrators (the ``admin`` role) use every page here (``accounts.admin_access``); only a
superuser makes another, and only a superuser sees a group's Django permissions. Role groups
cannot be renamed or deleted here, nor can a group that restricts repositories (deleting it would
open them to every account); trying to says which (naming the repositories to administrators
only), and what to do instead (``kept_because``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import GroupAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from accounts.admin_access import AdministratorsManage, is_administrator
from accounts.admin_audit import AuditedAdmin
from accounts.admin_users import AuditedUserAdmin
from accounts.audit import client_address, record
from accounts.models import ApiToken, AuditEntry
from accounts.roles import ROLE_GROUPS, is_role_group
from accounts.tokens import revoke_token
from reposearch.views import error_response

admin.site.unregister(User)
admin.site.unregister(Group)
admin.site.register(User, AuditedUserAdmin)


RESTRICTED_NAMES_SHOWN = 5


def kept_because(group: Group, *, name_repositories: bool) -> str | None:
    """Why ``group`` cannot be deleted, and what to do instead; ``None`` when it can be. The
    repositories it restricts are named only when ``name_repositories`` (to administrators, who
    see every repository); anyone else is told how many."""
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
    count = f"{len(names)} repositor{'y' if len(names) == 1 else 'ies'}"
    if not name_repositories:
        return (
            f"{group.name} restricts {count}: deleting it would let every account see "
            f"{'it' if len(names) == 1 else 'them'}. An administrator takes {group.name} off "
            "their visibility groups first (in each repository's form here or with "
            "PATCH /api/repos/{id}), then deletes it."
        )
    shown = ", ".join(names[:RESTRICTED_NAMES_SHOWN])
    if len(names) > RESTRICTED_NAMES_SHOWN:
        shown += f" and {len(names) - RESTRICTED_NAMES_SHOWN} more"
    return (
        f"{group.name} restricts {count} ({shown}): deleting it would let every account see "
        f"them. Take {group.name} off their visibility groups first, in each repository's form "
        f"here ({reverse('admin:indexing_repository_changelist')}) or with "
        "PATCH /api/repos/{id} and visibility_groups, then delete it."
    )


@admin.register(Group)
class AuditedGroupAdmin(AdministratorsManage, AuditedAdmin, GroupAdmin):
    def get_exclude(self, request: HttpRequest, obj: Any = None) -> Any:
        excluded = list(super().get_exclude(request, obj) or ())
        if not getattr(request.user, "is_superuser", False):
            # Django's model permissions would let a member with 'Staff status' change
            # accounts whatever their role; reposearch gives rights by role only.
            excluded.append("permissions")
        return excluded

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
        named = is_administrator(request)
        reason = kept_because(group, name_repositories=named) if group is not None else None
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
