"""``GET /api/symbols``, ``/api/symbols/definitions`` and ``/api/symbols/references``.

Thin: query parameters through a serializer, one service call, the documents of
``search.symbols.documents``. Bad input is a 400 in the one error shape (``QueryRejected``), a
repository the account may not see a 404 like one that does not exist (``RepositoryNotFound``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from accounts.throttles import SearchRateThrottle
from accounts.visibility import viewer_for
from reposearch.api_schema import error_responses
from search.symbols.documents import definitions_doc
from search.symbols.serializers import (
    DefinitionQuerySerializer,
    ReferenceListSerializer,
    ReferenceQuerySerializer,
    SymbolListSerializer,
    SymbolQuerySerializer,
)
from search.symbols.service import go_to_definition, search_symbols

ERRORS = error_responses(
    400,
    404,
    s400="A missing or empty name, one over 200 characters or with spaces, a limit out of range.",
    s404="`repo` names no repository the account may see.",
)


def _params(request: Request, serializer_class: type[Serializer]) -> dict[str, Any]:
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class SymbolListView(APIView):
    """Definitions by name: exact, then prefix, then substring, then similar names."""

    throttle_classes = [SearchRateThrottle]
    query_parameters = frozenset(SymbolQuerySerializer().fields)

    @extend_schema(
        operation_id="symbols",
        parameters=[SymbolQuerySerializer],
        responses={200: SymbolListSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        params = _params(request, SymbolQuerySerializer)
        viewer = viewer_for(request.user)
        answer = search_symbols(params.pop("q"), viewer, **params)
        hits = definitions_doc(answer.hits, viewer)
        return Response(
            {
                "query": answer.query,
                "results": hits,
                "total": len(hits),
                "truncated": answer.truncated,
                "notices": answer.notices,
            }
        )


class DefinitionListView(APIView):
    """Go to definition: the definitions of a name, the given repository and language first."""

    throttle_classes = [SearchRateThrottle]
    query_parameters = frozenset(DefinitionQuerySerializer().fields)

    @extend_schema(
        operation_id="symbol_definitions",
        parameters=[DefinitionQuerySerializer],
        responses={200: SymbolListSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        params = _params(request, DefinitionQuerySerializer)
        viewer = viewer_for(request.user)
        answer = go_to_definition(params.pop("name"), viewer, **params)
        hits = definitions_doc(answer.hits, viewer, snippet=True)
        return Response(
            {
                "query": answer.query,
                "results": hits,
                "total": len(hits),
                "truncated": answer.truncated,
            }
        )


class ReferenceListView(APIView):
    """Find references: call sites tree-sitter recorded plus the identifier's exact matches."""

    throttle_classes = [SearchRateThrottle]
    query_parameters = frozenset(ReferenceQuerySerializer().fields)

    @extend_schema(
        operation_id="symbol_references",
        parameters=[ReferenceQuerySerializer],
        responses={200: ReferenceListSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        from search.symbols.references import find_references, reference_doc

        params = _params(request, ReferenceQuerySerializer)
        answer = find_references(params.pop("name"), viewer_for(request.user), **params)
        hits = [reference_doc(ref) for ref in answer.references]
        return Response(
            {
                "query": answer.name,
                "results": hits,
                "total": len(hits),
                "truncated": answer.truncated,
            }
        )
