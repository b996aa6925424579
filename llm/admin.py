"""Admin view of the stored model configuration overrides."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from accounts.admin_access import AdministratorsManage
from accounts.admin_audit import AuditedAdmin
from llm.models import ModelConfig


@admin.register(ModelConfig)
class ModelConfigAdmin(AdministratorsManage, AuditedAdmin, admin.ModelAdmin):
    list_display = ("__str__", "provider", "chat_model", "embedding_provider", "updated_at")
    readonly_fields = ("updated_at",)

    # Changes go through PUT /api/config, which validates the merged configuration.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ModelConfig | None = None) -> bool:
        return False
