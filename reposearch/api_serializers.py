"""Request serializers shared by every API: unknown fields are an error, not silently ignored."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    """A request body may only hold the fields the serializer declares (typos get a 400)."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = self.initial_data
        unknown = set(data) - set(self.fields) if isinstance(data, dict) else set()
        if unknown:
            raise serializers.ValidationError(f"unknown fields: {', '.join(sorted(unknown))}")
        return attrs
