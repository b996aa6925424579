"""Input validation for ``PUT /api/config``."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from llm.config import CHAT_PROVIDERS, EMBEDDING_PROVIDERS, MAX_EMBEDDING_DIM
from reposearch.api_serializers import StrictChoiceField

# Shown by GET; a client may send them back unchanged (GET, edit, PUT) but not change them.
READ_ONLY_HINTS = {
    "base_url": "base_url is read-only over the API; set LLM_BASE_URL",
    "api_key_set": "api_key_set is read-only; set LLM_API_KEY in the environment",
    "embedding_space": "embedding_space is derived from the embedding provider, model and dim",
}
SECRET_FIELDS = {"api_key": "the API key is read-only over the API; set LLM_API_KEY"}


class ConfigUpdateSerializer(serializers.Serializer):
    """A partial update: absent fields keep their value; null resets to the environment."""

    provider = StrictChoiceField(choices=CHAT_PROVIDERS, required=False, allow_null=True)
    chat_model = serializers.CharField(
        max_length=200, required=False, allow_null=True, allow_blank=False
    )
    embedding_provider = StrictChoiceField(
        choices=EMBEDDING_PROVIDERS, required=False, allow_null=True
    )
    embedding_model = serializers.CharField(
        max_length=200, required=False, allow_null=True, allow_blank=False
    )
    embedding_dim = serializers.IntegerField(
        min_value=1, max_value=MAX_EMBEDDING_DIM, required=False, allow_null=True
    )

    def __init__(self, *args: Any, current: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current = current or {}

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = self.initial_data if isinstance(self.initial_data, dict) else {}
        errors: dict[str, str] = {}
        for name, value in data.items():
            if name in self.fields:
                continue
            if name in SECRET_FIELDS:
                errors[name] = SECRET_FIELDS[name]
            elif name in READ_ONLY_HINTS:
                if value != self.current.get(name):
                    errors[name] = READ_ONLY_HINTS[name]
            else:
                errors[name] = "unknown field"
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["expected a JSON object"]})
        return super().to_internal_value(data)
