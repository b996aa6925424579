"""``POST /api/ask``: serializer -> ``answer_question`` -> JSON, or server-sent events.

Errors: 400 for invalid input (empty question, bad types, k outside 1..20, unknown fields,
malformed JSON), 413 for a question over 2,000 characters, 404 for unknown repository ids or
names (``repo_ids`` / ``repos`` take either, as ``POST /api/search``'s do),
503 when no chat model can answer (or all of this process's model-call slots stay busy,
``model_busy``) and 502 when it answers with something unusable -- both with the retrieved
sources in ``error.details`` so the caller still learns where to look.

With ``Accept: text/event-stream`` or ``"stream": true`` the answer streams
(``search.ask.stream``): authentication, the ask throttle and every input check above run
first and answer as JSON with their status; once the stream has begun (200), a model failure is
its last event, ``error``, in the same error shape.
"""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import Role
from accounts.throttles import AskRateThrottle
from accounts.visibility import viewer_for
from reposearch.api_schema import error_responses
from reposearch.api_serializers import refuse_too_long
from search import contract
from search.ask.disconnects import client_gone
from search.ask.serializers import MAX_QUESTION_CHARS, AskRequestSerializer, AskResponseSerializer
from search.ask.service import AskRequest, answer_question
from search.ask.stream import answer_events
from search.retrieval.scope import scope_repositories

EVENT_STREAM = "text/event-stream"
# One server-sent event of the streamed answer (``data`` is JSON text; see search.ask.stream).
EVENT_SCHEMA = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": ["sources", "delta", "done", "error"]},
        "data": {"type": "string", "description": "The event's JSON."},
    },
    "required": ["event", "data"],
}


def wants_events(request: Request, body: dict[str, Any]) -> bool:
    return bool(body.get("stream")) or EVENT_STREAM in request.headers.get("Accept", "")


class AskView(APIView):
    """Answer a question from the indexed code with citations resolved from chunk metadata."""

    required_roles = {"POST": Role.READ}  # a read, though it is a POST
    throttle_classes = [AskRateThrottle]

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # A client asking for events gets JSON for everything that is not the stream itself
        # (401, 429, 400, 404...), instead of a 406 for an Accept no renderer offers.
        if EVENT_STREAM in request.headers.get("Accept", ""):
            return JSONRenderer(), JSONRenderer.media_type
        return super().perform_content_negotiation(request, force)

    @extend_schema(
        operation_id="ask",
        request=AskRequestSerializer,
        responses={
            (200, "application/json"): AskResponseSerializer,
            (200, EVENT_STREAM): OpenApiResponse(
                EVENT_SCHEMA,
                description='With `Accept: text/event-stream` or `"stream": true`: server-sent '
                "events `sources`, then `delta` (the model's text as it writes), then `done` "
                "(this operation's JSON answer) or `error` (the error shape, with the sources).",
            ),
            **error_responses(
                400,
                404,
                413,
                502,
                503,
                s404="Unknown repository id(s) (`details.repo_ids`) or name(s) (`details.repos`, "
                "with the nearest names in `details.suggestions`).",
                s413=f"Question over {MAX_QUESTION_CHARS} characters, or a body over the limit.",
                s502="The chat model answered with something unusable; `details.sources` holds "
                "what was retrieved.",
                s503="No chat model reachable; `details.sources` holds what was retrieved.",
            ),
        },
    )
    def post(self, request: Request) -> Response | StreamingHttpResponse:
        refuse_too_long(request.data, "question", MAX_QUESTION_CHARS)
        serializer = AskRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        viewer = viewer_for(request.user)  # what the account may see, and the model with it
        # Ids or names, as /api/search takes them: an unknown name is a 404 with the nearest.
        refs = [*(data.get("repo_ids") or []), *(data.get("repos") or [])]
        ask = AskRequest(
            question=data["question"],
            repo_ids=contract.repository_ids(refs, viewer),
            k=data["k"],
            expand=data["expand"],
            expand_depth=data["expand_depth"],
            hyde=data["hyde"],
            include_tests=data.get("include_tests"),
            include_docs=data.get("include_docs"),
            viewer=viewer,
        )
        if wants_events(request, data):
            if ask.repo_ids:  # unknown ids are a 404 before the stream begins
                scope_repositories(ask.repo_ids, ask.viewer)
            events = answer_events(ask, client_gone=client_gone(request.META))
            response = StreamingHttpResponse(events, content_type=EVENT_STREAM)
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"  # nginx: pass events on as they come
            return response
        # UnknownRepositories (404) and AskFailed (502/503, with the sources in details) are
        # answered by reposearch.api_errors.
        result = answer_question(ask)
        return Response(result.as_dict())
