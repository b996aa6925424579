"""``/api/tokens`` (personal API tokens) and ``/api/audit`` (the audit log, for admins).

Everyone with an account manages their own tokens; administrators see and revoke everyone's
(``GET /api/tokens?all=1``). A token made with a token is its child (``accounts.tokens``). A token's secret is in the creation answer only. Tokens are never
available to anonymous requests, whatever ``REPO_SEARCH_ANONYMOUS_READ`` says.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.serializers import (
    AuditEntrySerializer,
    AuditPageSerializer,
    NewTokenSerializer,
    TokenCreateSerializer,
    TokenListSerializer,
    TokenSerializer,
)
from accounts.audit import AuditedWrites
from accounts.models import ApiToken, AuditEntry
from accounts.permissions import request_role
from accounts.roles import Role
from accounts.tokens import TokenRefused, create_token, revoke_token
from reposearch.api_errors import ApiError
from reposearch.api_schema import error_responses

AUDIT_PAGE_DEFAULT = 50
AUDIT_PAGE_MAX = 500


def _visible_tokens(request: Request) -> QuerySet[ApiToken]:
    rows = ApiToken.objects.select_related("user")
    if request_role(request) == Role.ADMIN:
        return rows
    return rows.filter(user_id=request.user.pk or 0)


TOKEN_LIST_ALL = OpenApiParameter(
    "all", OpenApiTypes.BOOL, description="Admins: everyone's tokens (true or false)."
)


class TokenListView(AuditedWrites, APIView):
    required_roles = {"POST": Role.READ}  # anyone signed in may make tokens for themselves
    anonymous_read = False
    audit_actions = {"POST": "token.create"}
    query_parameters = frozenset({TOKEN_LIST_ALL.name})

    @extend_schema(
        operation_id="tokens_list",
        parameters=[TOKEN_LIST_ALL],
        responses={200: TokenListSerializer},
    )
    def get(self, request: Request) -> Response:
        rows = _visible_tokens(request)
        everyone = request.query_params.getlist("all")
        if len(everyone) > 1 or not set(everyone) <= {*TRUE_WORDS, *FALSE_WORDS}:
            raise ApiError(  # "null", "maybe" or two answers: not a boolean
                "all: expected true or false", details={"fields": {"all": "not a boolean"}}
            )
        if not everyone or everyone[0] not in TRUE_WORDS:
            rows = rows.filter(user_id=request.user.pk or 0)
        return Response({"results": TokenSerializer(rows, many=True).data})

    @extend_schema(
        operation_id="tokens_create",
        request=TokenCreateSerializer,
        responses={201: NewTokenSerializer, **error_responses(400)},
    )
    def post(self, request: Request) -> Response:
        serializer = TokenCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = serializer.validated_data
        ceiling = request_role(request)
        if ceiling is not None and Role.parse(fields["scope"]) > ceiling:
            # Well-formed but not allowed to this caller: 403, as any other role refusal.
            above = f"above what this request acts as ({ceiling.label})"
            raise ApiError(
                f"scope: {above}",
                code="permission_denied",
                status_code=status.HTTP_403_FORBIDDEN,
                details={"fields": {"scope": above}},
            )
        # A token makes children of itself: no longer-lived, no higher, revoked with it.
        parent = request.auth if isinstance(request.auth, ApiToken) else None
        try:
            made = create_token(
                request.user,
                fields["name"],
                fields["scope"],
                fields.get("expires_in_days"),
                parent=parent,
            )
        except TokenRefused as error:
            field, _, message = str(error).partition(": ")
            raise serializers.ValidationError({field: message}) from None
        details: dict[str, Any] = {"name": made.token.name, "scope": made.token.scope}
        if parent is not None:
            details["parent"] = parent.pk
        request.audit_details = details  # type: ignore[attr-defined]
        body = dict(TokenSerializer(made.token).data)
        body["token"] = made.secret
        return Response(body, status=status.HTTP_201_CREATED)


class TokenDetailView(AuditedWrites, APIView):
    required_roles = {"DELETE": Role.READ}  # your own tokens; admins everyone's
    anonymous_read = False
    audit_actions = {"DELETE": "token.revoke"}

    def _token(self, request: Request, token_id: int) -> ApiToken:
        token = _visible_tokens(request).filter(pk=token_id).first()
        if token is None:
            raise ApiError("unknown token", code="not_found", status_code=404)
        return token

    @extend_schema(operation_id="tokens_retrieve", responses={200: TokenSerializer})
    def get(self, request: Request, token_id: int) -> Response:
        return Response(TokenSerializer(self._token(request, token_id)).data)

    @extend_schema(operation_id="tokens_revoke", responses={204: None})
    def delete(self, request: Request, token_id: int) -> Response:
        token = self._token(request, token_id)
        details: dict[str, Any] = {"name": token.name, "owner": token.user.username}
        request.audit_details = details  # type: ignore[attr-defined]
        children = revoke_token(token)
        if children:
            details["revoked_with_it"] = children
        return Response(status=status.HTTP_204_NO_CONTENT)


def _time_param(request: Request, name: str) -> datetime | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        value = parse_datetime(raw)
        if value is not None:  # to UTC: PostgreSQL takes offsets up to 15:59 only
            value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (ValueError, OverflowError):
        value = None
    if value is None:
        raise ApiError(
            f"{name}: expected an ISO 8601 time such as 2026-12-01T12:00:00Z",
            details={"fields": {name: "not a time"}},
        )
    return value


TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes"), ("0", "false", "no")


def _whole_number(low: int, high: int) -> dict[str, Any]:
    """A query parameter's schema: a whole number from ``low`` to ``high`` (what ``_int_param``
    accepts)."""
    return {"type": "integer", "minimum": low, "maximum": high}


def _int_param(request: Request, name: str, default: int | None, high: int) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= high:
        raise ApiError(
            f"{name}: expected a whole number from 1 to {high}",
            details={"fields": {name: "out of range"}},
        )
    return int(raw)


AUDIT_LIST_PARAMETERS = [
    OpenApiParameter("actor", str, description="User name, exactly."),
    OpenApiParameter("action", str, description="e.g. repository.add; a prefix with *."),
    OpenApiParameter("since", OpenApiTypes.DATETIME),
    OpenApiParameter("until", OpenApiTypes.DATETIME),
    OpenApiParameter(
        "before", _whole_number(1, 2**62), description="The `next_before` of the last page."
    ),
    OpenApiParameter(
        "limit",
        _whole_number(1, AUDIT_PAGE_MAX),
        description=f"1 to {AUDIT_PAGE_MAX}, default 50.",
    ),
]


class AuditLogView(APIView):
    required_roles = {"GET": Role.ADMIN}
    anonymous_read = False
    query_parameters = frozenset(p.name for p in AUDIT_LIST_PARAMETERS)

    @extend_schema(
        operation_id="audit_list",
        parameters=AUDIT_LIST_PARAMETERS,
        responses={200: AuditPageSerializer},
    )
    def get(self, request: Request) -> Response:
        rows: QuerySet[AuditEntry] = AuditEntry.objects.order_by("-id")
        params: dict[str, Any] = request.query_params
        if params.get("actor") is not None:
            rows = rows.filter(actor=params["actor"])
        action = params.get("action")
        if action:
            rows = (
                rows.filter(action__startswith=action[:-1])
                if action.endswith("*")
                else rows.filter(action=action)
            )
        since, until = _time_param(request, "since"), _time_param(request, "until")
        if since is not None:
            rows = rows.filter(at__gte=since)
        if until is not None:
            rows = rows.filter(at__lt=until)
        before = _int_param(request, "before", None, 2**62)
        if before is not None:
            rows = rows.filter(id__lt=before)
        limit = _int_param(request, "limit", AUDIT_PAGE_DEFAULT, AUDIT_PAGE_MAX) or 1
        page = list(rows[: limit + 1])
        more = len(page) > limit
        page = page[:limit]
        return Response(
            {
                "results": AuditEntrySerializer(page, many=True).data,
                "next_before": page[-1].pk if more and page else None,
            }
        )
