"""Push webhooks: the delivery endpoint git hosts call, and the secret shown to set it up."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.audit import AuditedWrites
from accounts.roles import Role
from accounts.visibility import Viewer, visible_repositories
from indexing.api.views import _check_id, _get_repository, _not_found
from indexing.models import Repository
from indexing.webhooks.deliveries import receive_delivery, rotate_webhook_secret
from reposearch.api_schema import error_responses

WebhookSerializer = inline_serializer(
    "Webhook",
    {
        "url": serializers.URLField(help_text="The payload URL to give the git host."),
        "secret": serializers.CharField(help_text="The secret to give the git host."),
        "content_type": serializers.CharField(help_text='Always "application/json".'),
    },
)

DeliverySerializer = inline_serializer(
    "WebhookDelivery",
    {
        "status": serializers.ChoiceField(
            choices=["pong", "queued", "coalesced", "up_to_date", "ignored"]
        ),
        "provider": serializers.CharField(),
        "event": serializers.CharField(),
        "reason": serializers.CharField(),
        "branch": serializers.CharField(),
        "commit": serializers.CharField(),
        "job_id": serializers.IntegerField(allow_null=True),
    },
)


def _webhook_body(request: Request, repository: Repository) -> dict[str, str]:
    return {
        "url": request.build_absolute_uri(f"/api/hooks/{repository.pk}"),
        "secret": repository.webhook_secret,
        "content_type": "application/json",
    }


class WebhookDeliveryView(AuditedWrites, APIView):
    audit_actions = {"POST": "webhook.delivery"}
    # The git host proves itself with the repository's secret (indexing.webhooks), not a token.
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    throttle_classes: list[type] = []

    @extend_schema(
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            200: DeliverySerializer,
            202: DeliverySerializer,
            **error_responses(
                400,
                401,
                404,
                413,
                s400="A signed delivery whose body is not a push payload of its provider.",
                s401="The signature or token is missing or does not match the repository's "
                "secret; nothing is queued.",
            ),
        },
    )
    def post(self, request: Request, repository_id: str) -> Response:
        """A push from GitHub, GitLab, Gitea/Forgejo or Bitbucket Cloud: 202 with what was
        done (a re-index queued or coalesced, or why nothing was), 200 for a ping.

        The git host has no account: the delivery is authenticated by the repository's secret,
        so every repository, restricted or not, is looked up."""
        _check_id(repository_id)
        repository = visible_repositories(Viewer.everything()).filter(pk=repository_id).first()
        if repository is None:
            raise _not_found(repository_id)
        result = receive_delivery(
            repository, request.headers, request.body, request.content_type or ""
        )
        code = status.HTTP_200_OK if result.status == "pong" else status.HTTP_202_ACCEPTED
        return Response(result.as_dict(), status=code)


class RepositoryWebhookView(APIView):
    required_roles = {"GET": Role.WRITE}  # the secret lets its holder queue re-indexes

    @extend_schema(responses={200: WebhookSerializer, **error_responses(404)})
    def get(self, request: Request, repository_id: str) -> Response:
        """The payload URL and secret to configure a push webhook on the git host."""
        return Response(_webhook_body(request, _get_repository(request, repository_id)))


class RepositoryWebhookRotateView(AuditedWrites, APIView):
    audit_actions = {"POST": "webhook.rotate"}

    @extend_schema(request=None, responses={200: WebhookSerializer, **error_responses(404)})
    def post(self, request: Request, repository_id: str) -> Response:
        """A new secret; deliveries signed with the old one get 401 from now on."""
        repository = _get_repository(request, repository_id)
        rotate_webhook_secret(repository)
        return Response(_webhook_body(request, repository))
