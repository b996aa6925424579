"""Query parameters and answers of ``/api/symbols`` (validation and the OpenAPI schema)."""

from __future__ import annotations

from rest_framework import serializers

from search.serializers import NoticeSerializer
from search.symbols.lookup import MAX_NAME_CHARS, TIERS
from search.symbols.service import MAX_FILTER_CHARS, MAX_LIMIT

REPO_HELP = "A repository id or name (a name with `/` URL-encoded: `acme%2Fshop`)."


class SymbolQuerySerializer(serializers.Serializer):
    q = serializers.CharField(max_length=MAX_NAME_CHARS, help_text="A name or part of one.")
    repo = serializers.CharField(required=False, max_length=300, help_text=REPO_HELP)
    lang = serializers.CharField(required=False, max_length=MAX_FILTER_CHARS)
    kind = serializers.CharField(
        required=False,
        max_length=MAX_FILTER_CHARS,
        help_text="function, method, class, module or section (another is a 400).",
    )
    branch = serializers.CharField(
        required=False,
        max_length=255,
        help_text="An indexed branch, a glob (release/*) or * (default: each default branch).",
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, default=20)


class DefinitionQuerySerializer(serializers.Serializer):
    name = serializers.CharField(max_length=MAX_NAME_CHARS, help_text="The exact name.")
    repo = serializers.CharField(
        required=False, max_length=300, help_text="Preferred repository: " + REPO_HELP
    )
    lang = serializers.CharField(
        required=False, max_length=MAX_FILTER_CHARS, help_text="Preferred language."
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, default=20)


class ReferenceQuerySerializer(serializers.Serializer):
    name = serializers.CharField(max_length=MAX_NAME_CHARS, help_text="An identifier.")
    repo = serializers.CharField(required=False, max_length=300, help_text="Only " + REPO_HELP)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=500, default=100)


class DefinitionSerializer(serializers.Serializer):
    name = serializers.CharField()
    symbol = serializers.CharField(help_text="Qualified: Client.send")
    kind = serializers.CharField()
    container = serializers.CharField(help_text="What it is defined in: Client (or empty).")
    language = serializers.CharField()
    repository = serializers.CharField()
    repo_id = serializers.UUIDField()
    path = serializers.CharField()
    start_line = serializers.IntegerField()
    end_line = serializers.IntegerField()
    match = serializers.ChoiceField(choices=list(TIERS))
    commit = serializers.CharField()
    branch = serializers.CharField(required=False, help_text="Its branch (with a branch filter).")
    url = serializers.CharField(help_text="The file at the indexed commit, at these lines.")
    upstream_url = serializers.CharField(allow_null=True)
    snippet = serializers.CharField(required=False, help_text="Its first lines.")


class SymbolListSerializer(serializers.Serializer):
    query = serializers.CharField()
    results = DefinitionSerializer(many=True)
    total = serializers.IntegerField(help_text="Hits in this answer.")
    truncated = serializers.BooleanField(help_text="More matched than the limit.")
    notices = NoticeSerializer(
        many=True,
        required=False,
        help_text="No result: a lang filter that matches no indexed file in the repositories "
        "searched, with the languages there.",
    )


class ReferenceSerializer(serializers.Serializer):
    repository = serializers.CharField()
    repo_id = serializers.UUIDField()
    path = serializers.CharField()
    language = serializers.CharField()
    line = serializers.IntegerField()
    start_line = serializers.IntegerField()
    end_line = serializers.IntegerField()
    snippet = serializers.CharField(help_text="The line.")
    ranges = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    via = serializers.ChoiceField(
        choices=["call", "text"],
        help_text="call: a call tree-sitter recorded; text: the identifier in the text.",
    )
    url = serializers.CharField()


class ReferenceListSerializer(serializers.Serializer):
    query = serializers.CharField()
    results = ReferenceSerializer(many=True)
    total = serializers.IntegerField(help_text="References in this answer.")
    truncated = serializers.BooleanField(help_text="Stopped at the limit or the time budget.")
