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


def refuse_too_long(data: Any, field: str, limit: int) -> None:
    """A text field over ``limit`` characters is a 413 before any other validation runs."""
    from rest_framework import status

    from reposearch.api_errors import ApiError

    value = data.get(field) if isinstance(data, dict) else None
    if isinstance(value, str) and len(value) > limit:
        raise ApiError(
            f"{field} is {len(value)} characters; the limit is {limit}",
            code=f"{field}_too_long",
            status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
