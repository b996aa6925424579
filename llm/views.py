"""``GET /api/config`` and ``PUT /api/config``: the model settings, without secrets."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.audit import AuditedWrites
from accounts.roles import Role
from llm import services
from llm.serializers import ConfigUpdateSerializer
from reposearch.api_schema import error_responses


class ConfigView(AuditedWrites, APIView):
    """Which models are in use. The base URL and API key are set in the environment only."""

    required_roles = {"PUT": Role.ADMIN}  # switching models re-embeds everything
    audit_actions = {"PUT": "config.change"}

    @extend_schema(responses={200: dict, **error_responses(400)})
    def get(self, request: Request) -> Response:
        return Response(services.config_payload())

    @extend_schema(
        request=ConfigUpdateSerializer, responses={200: dict, **error_responses(400, 413)}
    )
    def put(self, request: Request) -> Response:
        current = services.config_payload()
        serializer = ConfigUpdateSerializer(data=request.data, current=current)
        serializer.is_valid(raise_exception=True)
        try:
            before, after = services.update_config(dict(serializer.validated_data))
        except services.ConfigRejected as exc:
            raise serializers.ValidationError(exc.errors) from None
        body = services.config_payload(after)
        body["embedding_space_changed"] = before.space_key != after.space_key
        return Response(body)
