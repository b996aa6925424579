"""Shapes of the tokens and audit API."""

from __future__ import annotations

from rest_framework import serializers

from accounts.models import ApiToken, AuditEntry
from accounts.roles import ROLE_NAMES
from accounts.tokens import MAX_EXPIRY_DAYS
from reposearch.api_serializers import StrictCharField, StrictChoiceField, StrictSerializer


class TokenCreateSerializer(StrictSerializer):
    name = StrictCharField(max_length=100, trim_whitespace=True)  # 0 is a 400, not "0"
    scope = StrictChoiceField(choices=ROLE_NAMES, default="read")
    expires_in_days = serializers.IntegerField(
        min_value=1, max_value=MAX_EXPIRY_DAYS, required=False, allow_null=True
    )


class TokenSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", read_only=True)
    expired = serializers.BooleanField(source="is_expired", read_only=True)
    # DRF's metaclass takes declared fields out of the class: no clash with ``Field.parent``.
    parent = serializers.IntegerField(  # type: ignore[assignment]
        source="parent_id",
        read_only=True,
        allow_null=True,
        help_text="The token that made this one (null: made by a signed-in user or an admin); "
        "revoking it revokes this one.",
    )

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "scope",
            "prefix",
            "user",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "expired",
            "parent",
        ]


class NewTokenSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The secret; shown only this once.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]


class TokenListSerializer(serializers.Serializer):
    results = TokenSerializer(many=True)


class AuditEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "at",
            "actor",
            "token_name",
            "action",
            "target",
            "address",
            "outcome",
            "details",
        ]


class AuditPageSerializer(serializers.Serializer):
    results = AuditEntrySerializer(many=True)
    next_before = serializers.IntegerField(
        allow_null=True, help_text="Pass as `before` for the next (older) page; null: no more."
    )
