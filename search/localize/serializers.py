"""Request and response shapes of ``POST /api/localize`` (strict types, as ``/api/search``)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from reposearch.api_serializers import (
    NonBlankTextField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    repositories_field,
)
from search.localize.service import MAX_ISSUE_CHARS

MAX_FILES = 50


class LocalizeRequestSerializer(StrictSerializer):
    issue = NonBlankTextField(
        help_text=f"The issue or stack trace, as written (1..{MAX_ISSUE_CHARS} characters): its "
        "title, prose, paths, tracebacks, backticked names, error messages and code blocks.",
    )
    repos = repositories_field(
        "Only these repositories, by name or id (unknown ones are a 404, with the "
        "nearest names). Left out: every repository the account may see."
    )
    branch = StrictCharField(
        required=False,
        allow_null=True,
        max_length=255,
        help_text="An indexed branch (or a glob); left out: each repository's default branch.",
    )
    limit = StrictIntegerField(min_value=1, max_value=MAX_FILES, default=10)
    include_tests = StrictBooleanField(
        default=False, help_text="Rank test files too (left out by default: fixes go in code)."
    )
    include_docs = StrictBooleanField(default=False, help_text="Rank docs and config too.")


class LocatedFunctionSerializer(serializers.Serializer):
    symbol = serializers.CharField()
    kind = serializers.CharField()
    start_line = serializers.IntegerField()
    end_line = serializers.IntegerField()
    score = serializers.FloatField()
    reasons = serializers.ListField(child=serializers.CharField())
    url = serializers.CharField(help_text="The file view at the function's lines.")


class LocatedFileSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    repo_id = serializers.UUIDField()
    repo_name = serializers.CharField()
    path = serializers.CharField()
    commit = serializers.CharField()
    branch = serializers.CharField(allow_blank=True)
    language = serializers.CharField(allow_blank=True)
    score = serializers.FloatField(help_text="The evidence's sum (comparable within one answer).")
    reasons = serializers.ListField(
        child=serializers.CharField(), help_text="Why the file ranked, strongest first."
    )
    url = serializers.CharField()
    functions = LocatedFunctionSerializer(
        many=True, help_text="The definitions that made the file rank, best first."
    )


class CluesSerializer(serializers.Serializer):
    paths = serializers.ListField(child=serializers.CharField())
    frames = serializers.ListField(child=serializers.CharField())
    identifiers = serializers.ListField(child=serializers.CharField())
    error_lines = serializers.ListField(child=serializers.CharField())
    code_blocks = serializers.IntegerField()


class LocalizeStageSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=["ran", "skipped", "failed"])
    reason = serializers.CharField(allow_blank=True)
    ms = serializers.FloatField()
    detail = serializers.DictField()


class LocalizeResponseSerializer(serializers.Serializer):
    files = LocatedFileSerializer(many=True)
    clues = CluesSerializer(help_text="What was read from the issue.")
    queries = serializers.ListField(
        child=serializers.CharField(), help_text="The hybrid searches run (condensed issue, names)."
    )
    trace = LocalizeStageSerializer(many=True)
    ms = serializers.FloatField()


def serialize_localize(document: dict[str, Any]) -> dict[str, Any]:
    return LocalizeResponseSerializer(document).data  # type: ignore[return-value]
