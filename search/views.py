"""``POST /api/search``: serializer -> ``search.contract`` -> ``SearchExecutor`` -> document.

Errors: 400 for invalid input (empty query, bad types, limit outside 1..100, unknown fields,
malformed JSON, bad path globs), 413 for a query over 1,000 characters, 404 for repository ids
that do not exist (the message names them). A model that is down, slow or answers garbage is
never an error: the search answers without that stage and the trace says why.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from reposearch.api_schema import error_responses
from reposearch.api_serializers import refuse_too_long
from search import contract
from search.executor import SearchExecutor
from search.serializers import (
    MAX_QUERY_CHARS,
    SearchRequestSerializer,
    SearchResponseSerializer,
)


class SearchView(APIView):
    """Hybrid code search: full-text + vector retrieval, fusion, optional expansion and rerank."""

    @extend_schema(
        operation_id="search",
        request=SearchRequestSerializer,
        responses={
            200: SearchResponseSerializer,
            **error_responses(
                400,
                404,
                413,
                s404="Unknown repository id(s); `details.repo_ids` lists them.",
                s413=f"Query over {MAX_QUERY_CHARS} characters, or a body over the limit.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        refuse_too_long(request.data, "query", MAX_QUERY_CHARS)
        serializer = SearchRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        search_request = contract.search_request(serializer.validated_data)
        # UnknownRepositories (404) and InvalidGlob (400) are answered by reposearch.api_errors.
        result = SearchExecutor().run(search_request)
        return Response(contract.response_document(search_request, result))
