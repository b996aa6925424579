"""Admin changes go to the audit log too: a mixin for ``ModelAdmin`` classes.

Django's admin already calls ``log_addition`` / ``log_change`` / ``log_deletions`` for every save
and delete (its own history); the mixin records the same events in ``AuditEntry`` with the
signed-in user and address, as ``<app>.<model>.add|change|delete``.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from accounts.audit import client_address, record


def _action(obj: Any, verb: str) -> str:
    meta = obj._meta
    return f"admin.{meta.app_label}.{meta.model_name}.{verb}"


class AuditedAdmin:
    def _audit(self, request: HttpRequest, obj: Any, verb: str, details: Any = None) -> None:
        record(
            _action(obj, verb),
            user=request.user,
            address=client_address(request),
            target=str(obj)[:300],
            details={"id": str(obj.pk), **({"changes": details} if details else {})},
        )

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._audit(request, obj, "add")
        return super().log_addition(request, obj, message)  # type: ignore[misc]

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._audit(request, obj, "change", message)
        return super().log_change(request, obj, message)  # type: ignore[misc]

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        for obj in queryset:
            self._audit(request, obj, "delete")
        return super().log_deletions(request, queryset)  # type: ignore[misc]
