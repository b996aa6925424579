"""Push webhooks: the delivery endpoint git hosts call, and the secret shown to set it up."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import Throttled
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.audit import AuditedWrites, client_address
from accounts.roles import Role
from indexing.api.views import _check_id, _get_repository
from indexing.models import Repository
from indexing.webhooks.deliveries import receive_delivery, rotate_webhook_secret
from indexing.webhooks.providers import BadSignature
from indexing.webhooks.refusals import count_refusal, over_limit
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
            choices=["pong", "queued", "coalesced", "up_to_date", "ignored", "replayed"]
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
                429,
                s400="A signed delivery whose body is not a push payload of its provider.",
                s401="The signature or token is missing or does not match the secret of a "
                "repository with this id (or there is none); nothing is queued.",
                s404="The id is not a UUID.",
                s429="Too many refused calls from this address; try again later.",
            ),
        },
    )
    def post(self, request: Request, repository_id: str) -> Response:
        """A push from GitHub, GitLab, Gitea/Forgejo or Bitbucket Cloud: 202 with what was
        done (a re-index queued or coalesced, or why nothing was), 200 for a ping or a
        delivery received before (``replayed``: nothing queued).

        The git host has no account: the delivery is authenticated by the repository's secret,
        so every repository, restricted or not, is looked up; an unknown id is a 401 like a bad
        signature. Calls refused so are counted per address (429 past the limit) and audited
        as a count (``indexing.webhooks.refusals``)."""
        _check_id(repository_id)
        address = client_address(request)
        if over_limit(address):
            request.audited_elsewhere = True  # type: ignore[attr-defined]
            count_refusal(address, "throttled", str(repository_id))
            raise Throttled(wait=settings.REPO_SEARCH_WEBHOOK_REFUSAL_WINDOW_SECS)
        # Restricted or not (the secret proves the caller); a missing one is refused in the
        # words of a bad signature, so the answer does not say which ids exist.
        repository = Repository.objects.filter(pk=repository_id).first()
        try:
            result = receive_delivery(
                repository, request.headers, request.body, request.content_type or ""
            )
        except BadSignature as refusal:
            request.audited_elsewhere = True  # type: ignore[attr-defined]
            count_refusal(address, refusal.code, str(repository_id))
            raise
        accepted = result.status not in ("pong", "replayed")
        code = status.HTTP_202_ACCEPTED if accepted else status.HTTP_200_OK
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
