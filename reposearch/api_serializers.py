"""Request serializers shared by every API: unknown fields are an error, not silently ignored."""

from __future__ import annotations

import difflib
from typing import Any

from rest_framework import serializers


class StrictBooleanField(serializers.BooleanField):
    """Only ``true``/``false``: ``"yes"`` or ``1`` is a 400, not a guess."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "A whole number is required."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """Only a JSON string: ``1`` is a 400, not ``"1"``. NUL characters are refused (DRF)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class NonBlankTextField(StrictCharField):
    """Free text kept as typed (not trimmed) that must hold something besides spaces; the
    schema says so (``reposearch.api_schema.NonBlankText``)."""

    refuses_blank_text = True
    default_error_messages = {"only_spaces": "must not be empty or only whitespace"}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not value.strip():
            self.fail("only_spaces")
        return value


def repositories_field(help_text: str) -> serializers.ListField:
    """A list of repositories by id or name, as every request that narrows by repository takes
    it (up to 50, each up to 300 characters; null or left out: every one the account sees)."""
    return serializers.ListField(
        child=StrictCharField(max_length=300),
        required=False,
        allow_null=True,
        max_length=50,
        help_text=help_text,
    )


class StrictSerializer(serializers.Serializer):
    """A request body may only hold the fields the serializer declares (typos get a 400 that
    names the nearest field and the ones the body takes)."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = self.initial_data
        unknown = set(data) - set(self.fields) if isinstance(data, dict) else set()
        if unknown:
            known = sorted(name for name, field in self.fields.items() if not field.read_only)
            hints = [
                f"{name} (did you mean {near[0]}?)"
                if (near := difflib.get_close_matches(str(name), known, n=1))
                else str(name)
                for name in sorted(unknown, key=str)
            ]
            raise serializers.ValidationError(
                f"unknown fields: {', '.join(hints)}; the fields: {', '.join(known)}"
            )
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
