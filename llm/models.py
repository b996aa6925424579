"""The stored model configuration: one row of overrides on top of the environment settings.

An empty field means "use the environment". The base URL and the API key are deliberately not
here: they are deployment secrets/topology and come from the environment only.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models


class ModelConfig(models.Model):
    """Singleton (pk=1): provider and model choices set through ``PUT /api/config``."""

    SINGLETON_ID: ClassVar[int] = 1
    OVERRIDE_FIELDS: ClassVar[tuple[str, ...]] = (
        "provider",
        "chat_model",
        "embedding_provider",
        "embedding_model",
        "embedding_dim",
    )

    provider = models.CharField(max_length=16, blank=True, default="")
    chat_model = models.CharField(max_length=200, blank=True, default="")
    embedding_provider = models.CharField(max_length=16, blank=True, default="")
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    embedding_dim = models.PositiveIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "model configuration"
        verbose_name_plural = "model configuration"

    def __str__(self) -> str:
        return "model configuration overrides"

    def overrides(self) -> dict[str, object]:
        """The fields that are set, by API name."""
        values = {name: getattr(self, name) for name in self.OVERRIDE_FIELDS}
        return {k: v for k, v in values.items() if v not in ("", None)}
