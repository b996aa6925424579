"""Django app configuration for llm."""

from __future__ import annotations

from django.apps import AppConfig


class LlmConfig(AppConfig):
    name = "llm"
    default_auto_field = "django.db.models.BigAutoField"
