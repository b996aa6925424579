"""``POST /api/ask``: serializer -> ``answer_question`` -> JSON.

Errors: 400 for invalid input (empty question, bad types, k outside 1..20, unknown fields,
malformed JSON), 413 for a question over 2,000 characters, 404 for unknown repository ids,
503 when no chat model can answer and 502 when it answers with something unusable -- both
with the retrieved sources in ``error.details`` so the caller still learns where to look.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import Role
from accounts.throttles import AskRateThrottle
from accounts.visibility import viewer_for
from reposearch.api_schema import error_responses
from reposearch.api_serializers import refuse_too_long
from search.ask.serializers import MAX_QUESTION_CHARS, AskRequestSerializer, AskResponseSerializer
from search.ask.service import AskRequest, answer_question


class AskView(APIView):
    """Answer a question from the indexed code with citations resolved from chunk metadata."""

    required_roles = {"POST": Role.READ}  # a read, though it is a POST
    throttle_classes = [AskRateThrottle]

    @extend_schema(
        operation_id="ask",
        request=AskRequestSerializer,
        responses={
            200: AskResponseSerializer,
            **error_responses(
                400,
                404,
                413,
                502,
                503,
                s404="Unknown repository id(s); `details.repo_ids` lists them.",
                s413=f"Question over {MAX_QUESTION_CHARS} characters, or a body over the limit.",
                s502="The chat model answered with something unusable; `details.sources` holds "
                "what was retrieved.",
                s503="No chat model reachable; `details.sources` holds what was retrieved.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        refuse_too_long(request.data, "question", MAX_QUESTION_CHARS)
        serializer = AskRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        ask = AskRequest(
            question=data["question"],
            repo_ids=data.get("repo_ids") or None,
            k=data["k"],
            expand=data["expand"],
            expand_depth=data["expand_depth"],
            hyde=data["hyde"],
            include_tests=data.get("include_tests"),
            include_docs=data.get("include_docs"),
            viewer=viewer_for(request.user),  # what the account may see, and the model with it
        )
        # UnknownRepositories (404) and AskFailed (502/503, with the sources in details) are
        # answered by reposearch.api_errors.
        result = answer_question(ask)
        return Response(result.as_dict())
