"""Admin pages of accounts: users and groups (audited), API tokens (revocable, never shown) and
the audit log (read-only: nobody adds, changes or deletes an entry here)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.admin_audit import AuditedAdmin
from accounts.audit import client_address, record
from accounts.models import ApiToken, AuditEntry
from accounts.tokens import revoke_token

admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class AuditedUserAdmin(AuditedAdmin, UserAdmin):  # type: ignore[type-arg]
    pass


@admin.register(Group)
class AuditedGroupAdmin(AuditedAdmin, GroupAdmin):
    pass


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "scope", "prefix", "created_at", "expires_at",
                    "last_used_at", "revoked_at")  # fmt: skip
    list_filter = ("scope",)
    search_fields = ("name", "user__username", "prefix")
    readonly_fields = ("user", "name", "scope", "prefix", "created_at", "expires_at",
                       "last_used_at", "revoked_at")  # fmt: skip
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
            revoke_token(token)
            record(
                "token.revoke",
                user=request.user,
                address=client_address(request),
                target=str(token.pk),
                details={"name": token.name, "owner": token.user.username, "via": "admin"},
            )
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
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
