"""``POST /api/localize``: an issue or stack trace -> the files (and functions) to change.

The same account rules, rate limit and error shape as ``POST /api/search``: a read; 400 for an
empty issue, bad types or unknown fields; 413 for an issue over 20,000 characters; 404 for
repository names or ids the account may not see (with the nearest visible names) and for a branch
no repository in scope has indexed.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import Role
from accounts.throttles import SearchRateThrottle
from accounts.visibility import viewer_for
from reposearch.api_schema import error_responses
from reposearch.api_serializers import refuse_too_long
from search import contract
from search.localize.response import localize_document
from search.localize.serializers import (
    LocalizeRequestSerializer,
    LocalizeResponseSerializer,
    serialize_localize,
)
from search.localize.service import MAX_ISSUE_CHARS, LocalizeRequest, localize


class LocalizeView(APIView):
    """Issue localisation: ranked files with the functions that made them rank, and why."""

    required_roles = {"POST": Role.READ}
    throttle_classes = [SearchRateThrottle]

    @extend_schema(
        operation_id="localize",
        request=LocalizeRequestSerializer,
        responses={
            200: LocalizeResponseSerializer,
            **error_responses(
                400,
                404,
                413,
                s404="Unknown repository name(s) or id(s) (`details.repos`), or a branch no "
                "repository in scope has indexed.",
                s413=f"Issue over {MAX_ISSUE_CHARS} characters, or a body over the limit.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        refuse_too_long(request.data, "issue", MAX_ISSUE_CHARS)
        serializer = LocalizeRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = serializer.validated_data
        viewer = viewer_for(request.user)
        branch = (fields.get("branch") or "").strip()
        result = localize(
            LocalizeRequest(
                issue=fields["issue"],
                viewer=viewer,
                repo_ids=contract.repository_ids(fields.get("repos"), viewer),
                branches=[branch] if branch else None,
                limit=fields["limit"],
                include_tests=fields["include_tests"],
                include_docs=fields["include_docs"],
            )
        )
        return Response(serialize_localize(localize_document(result, viewer)))
