"""``POST /api/search``: serializer -> ``search.contract`` -> ``search.router.run_search``
-> document.

The query language (``search.exact.query_language``) picks the mode: plain text is hybrid
search, ``"literals"`` exact search, ``/regex/`` regex search (``OR`` / ``NOT`` / ``-`` / ``( )``
combine those); ``mode`` overrides. A filter-like word it cannot apply is a 400 whose details
carry the suggestion (``suggestion``, ``suggested_query``), the same for the UI and MCP.

Errors: 400 for invalid input (empty query, bad types, limit outside 1..100, unknown fields,
malformed JSON, bad path globs), 413 for a query over 1,000 characters, 404 for repository ids
that do not exist or the account may not see (the message names them, the same for both). A model that is down, slow or answers garbage is
never an error: the search answers without that stage and the trace says why.
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
from search import contract, fair_use
from search.response import search_body
from search.router import SearchCall, run_search
from search.serializers import (
    MAX_QUERY_CHARS,
    SearchRequestSerializer,
    SearchResponseSerializer,
    serialize_response,
)


class SearchView(APIView):
    """Hybrid code search: full-text + vector retrieval, fusion, optional expansion and rerank."""

    required_roles = {"POST": Role.READ}  # a read, though it is a POST
    throttle_classes = [SearchRateThrottle]

    @extend_schema(
        operation_id="search",
        request=SearchRequestSerializer,
        responses={
            200: SearchResponseSerializer,
            **error_responses(
                400,
                404,
                413,
                s404="Unknown repository id(s) (`details.repo_ids`), name(s) (`details.repos`) or a "
                "`repo:` matching none.",
                s413=f"Query over {MAX_QUERY_CHARS} characters, or a body over the limit.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        refuse_too_long(request.data, "query", MAX_QUERY_CHARS)
        serializer = SearchRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        mode, cursor, context_lines, file_path, match_offset = (
            fields.pop(k, None)
            for k in ("mode", "cursor", "context_lines", "file_path", "match_offset")
        )
        # Only the repositories the account may see are searched, counted and named.
        viewer = viewer_for(request.user)
        refs = [*(fields.pop("repo_ids", None) or []), *(fields.pop("repos", None) or [])]
        fields["repo_ids"] = contract.repository_ids(refs, viewer)
        search_request = contract.search_request(fields, viewer=viewer)
        # QueryRejected (400/404), UnknownRepositories (404) and InvalidGlob (400) are answered
        # by reposearch.api_errors. Text without query syntax runs exactly this hybrid request.
        outcome = run_search(
            SearchCall(
                request=search_request,
                mode=mode,
                cursor=cursor or None,
                context_lines=context_lines,
                file_path=file_path or None,
                match_offset=match_offset or 0,
                caller=fair_use.caller_of(request.user, request.META.get("REMOTE_ADDR")),
            )
        )
        body = search_body(outcome, search_request.limit)
        return Response(serialize_response(body))
