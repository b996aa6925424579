"""Request serializers shared by every API: unknown fields are an error, not silently ignored."""

from __future__ import annotations

import difflib
from typing import Any

from rest_framework import serializers
from rest_framework.settings import api_settings


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


class StrictChoiceField(serializers.ChoiceField):
    """One of ``choices``; anything else is a 400 that lists them (and names the one meant when
    only the case differs: ``"EXACT"``)."""

    default_error_messages = {
        "invalid_choice": '"{input}" is not a valid choice{hint}; the choices: {choices}'
    }

    def to_internal_value(self, data: Any) -> Any:
        if data == "" and self.allow_blank:
            return ""
        key = str(data)
        if key in self.choice_strings_to_values:
            return self.choice_strings_to_values[key]
        same = [c for c in self.choice_strings_to_values if c.lower() == key.lower()]
        hint = f": did you mean {same[0]}?" if same else ""
        choices = ", ".join(self.choice_strings_to_values)
        self.fail("invalid_choice", input=data, hint=hint, choices=choices)


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


# The names other search APIs (and the endpoints here) give a field or parameter: the nearest
# by spelling would miss these. The first of the names the endpoint takes is the hint.
OTHER_NAMES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("k", "top_k", "n", "size", "count", "max_results", "limit"), ("limit", "k")),
    **dict.fromkeys(
        ("q", "query", "text", "question", "issue"), ("query", "q", "issue", "question")
    ),
    **dict.fromkeys(("file", "path", "glob", "paths"), ("paths", "path")),
    **dict.fromkeys(("lang", "language", "languages"), ("languages", "lang")),
    **dict.fromkeys(("repo", "repository", "repos"), ("repos", "repo")),
    "branch": ("branches", "branch"),
}


def nearest_name(name: str, known: list[str]) -> str | None:
    """The field or parameter of ``known`` that ``name`` most likely meant, if any: what other
    search APIs call it (``k`` is ``limit``), else the nearest by spelling."""
    for other in OTHER_NAMES.get(name.lower(), ()):
        if other in known and other != name:
            return other
    near = difflib.get_close_matches(name.lower(), known, n=1)
    return near[0] if near else None


class StrictSerializer(serializers.Serializer):
    """A request body may only hold the fields the serializer declares (typos get a 400 that
    names the nearest field and the ones the body takes), checked before the fields are: a
    ``q`` for ``query`` is named as such, not answered "query: This field is required"."""

    def to_internal_value(self, data: Any) -> Any:
        unknown = set(data) - set(self.fields) if isinstance(data, dict) else set()
        if unknown:
            known = sorted(name for name, field in self.fields.items() if not field.read_only)
            hints = [
                f"{name} (did you mean {near}?)"
                if (near := nearest_name(str(name), known))
                else str(name)
                for name in sorted(unknown, key=str)
            ]
            message = f"unknown fields: {', '.join(hints)}; the fields: {', '.join(known)}"
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [message]})
        return super().to_internal_value(data)


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
