"""Request shape of ``POST /api/ask`` (strict types, unknown fields refused) and its limits."""

from __future__ import annotations

from rest_framework import serializers

from reposearch.api_serializers import (
    NonBlankTextField,
    StrictBooleanField,
    StrictIntegerField,
    StrictSerializer,
    repositories_field,
)

MAX_QUESTION_CHARS = 2000
MAX_K = 20
MAX_DEPTH = 4


class AskRequestSerializer(StrictSerializer):
    question = NonBlankTextField(
        help_text=f"The question about the indexed code (1..{MAX_QUESTION_CHARS} characters).",
    )
    # As POST /api/search's: ids or names, in either field (search.contract.repository_ids).
    repo_ids = repositories_field(
        "Only these repositories, by id or name (unknown ones are a 404; a name "
        "several repositories share is a 400 listing their ids). Default: all ready ones."
    )
    repos = repositories_field("The same as repo_ids (names read better); both together: either's.")
    k = StrictIntegerField(
        min_value=1, max_value=MAX_K, default=8, help_text="Retrieved snippets given to the model."
    )
    expand = StrictBooleanField(
        default=False, help_text="Add called definitions and a few callers (call graph)."
    )
    expand_depth = StrictIntegerField(
        min_value=1, max_value=MAX_DEPTH, default=2, help_text="Call-graph levels followed."
    )
    hyde = StrictBooleanField(
        default=False, help_text="Also search with a hypothetical snippet the model writes."
    )
    include_tests = StrictBooleanField(
        required=False, allow_null=True, default=None, help_text="null: automatic."
    )
    include_docs = StrictBooleanField(
        required=False, allow_null=True, default=None, help_text="null: automatic."
    )
    stream = StrictBooleanField(
        default=False,
        help_text="Answer as server-sent events (sources, answer deltas, done | error); "
        "the same as sending `Accept: text/event-stream`.",
    )

    def validate_question(self, value: str) -> str:
        return value.strip()


class SourceSerializer(serializers.Serializer):
    number = serializers.IntegerField(allow_null=True, help_text="Marker in the answer, [n].")
    context_number = serializers.IntegerField(help_text="The snippet's number in the prompt.")
    repo_id = serializers.UUIDField()
    repo_name = serializers.CharField()
    path = serializers.CharField()
    start_line = serializers.IntegerField()
    end_line = serializers.IntegerField()
    symbol = serializers.CharField()
    kind = serializers.CharField()
    language = serializers.CharField()
    commit = serializers.CharField(help_text="The indexed commit this source comes from.")
    branch = serializers.CharField()
    indexed_at = serializers.DateTimeField(allow_null=True, help_text="When it went live.")
    location = serializers.CharField(help_text="repository:path:start-end")
    permalink = serializers.CharField(
        help_text="Upstream URL when the host is known, else app_url."
    )
    app_url = serializers.CharField()
    upstream_url = serializers.CharField(allow_null=True)
    origin = serializers.ChoiceField(choices=["search", "hyde", "callee", "caller"])
    via = serializers.CharField()


class AnswerSerializer(serializers.Serializer):
    text = serializers.CharField(help_text="Citations as [n] markers, n = position in sources.")
    markdown = serializers.CharField(help_text="Citations as markdown links to the permalinks.")
    raw = serializers.CharField(help_text="The model's own text, unmodified.")


class AskResponseSerializer(serializers.Serializer):
    question = serializers.CharField()
    answered = serializers.BooleanField()
    answer = AnswerSerializer(allow_null=True)
    sources = SourceSerializer(many=True)
    snippets = serializers.ListField(
        child=serializers.DictField(), help_text="Every snippet the model was given, numbered."
    )
    warnings = serializers.ListField(child=serializers.CharField())
    trace = serializers.ListField(child=serializers.DictField())
    timings = serializers.DictField(child=serializers.FloatField())
