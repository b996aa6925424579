"""Refusals every route shares, made before a view parses anything, and friendly 404 pages.

``RequestGuardMiddleware`` answers, in the one error shape under ``/api/`` and as a page
elsewhere:

- 413 for a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (judged by ``Content-Length``, before a
  byte is read; Django's own ``RequestDataTooBig`` would surface as a 500 from inside DRF);
- 411 for a chunked body without ``Content-Length`` (Django would read it as empty);
- 400 for JSON nested deeper than ``MAX_JSON_DEPTH`` (Python's parser would recurse until a
  ``RecursionError``; no API body of ours nests more than a few levels);
- 400 for a NUL character in a query parameter (PostgreSQL text cannot hold one), or for more
  query parameters than ``DATA_UPLOAD_MAX_NUMBER_FIELDS``;
- 400 for a query parameter an API view does not read (``GET /api/repos?status=failed`` would
  otherwise list every repository, as if the filter had been applied): a view declares what it
  reads in ``query_parameters`` (none when it does not say; ``None``: not checked), the same
  names its OpenAPI operation lists, and DRF's ``format`` is always accepted.

NUL characters in JSON strings are refused by the serializers' ``CharField`` (DRF checks them).

``FriendlyNotFoundMiddleware`` renders the project's 404 for unknown routes and ``Http404``
even with ``DEBUG=1``, so no user is shown Django's debug page listing the URL patterns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

from reposearch.api_serializers import nearest_name
from reposearch.views import error_response, not_found

MAX_JSON_DEPTH = 64
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def json_depth_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when brackets outside strings nest deeper than ``limit`` (no parsing, no recursion)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    for match in _JSON_TOKENS.finditer(body):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token in (b"]", b"}"):
            depth -= 1
    return False


def _declared_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _looks_like_json(request: HttpRequest, body: bytes) -> bool:
    if "json" in (request.content_type or ""):
        return True
    return body.lstrip()[:1] in (b"{", b"[")


class RequestGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = self.refusal(request)
        return refusal if refusal is not None else self.get_response(request)

    def refusal(self, request: HttpRequest) -> HttpResponse | None:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        length = _declared_length(request)
        if limit is not None and length > limit:
            return error_response(
                request,
                413,
                "body_too_large",
                f"the request body is {length:,} bytes; the limit is {limit:,}",
                {"limit_bytes": limit},
            )
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not request.META.get("CONTENT_LENGTH"):
            # Django reads no body without a length: the view would see an empty one.
            return error_response(
                request,
                411,
                "length_required",
                "send the body with a Content-Length header (chunked bodies are not read)",
            )
        try:
            parameters = list(request.GET.lists())
        except TooManyFieldsSent:
            return error_response(
                request,
                400,
                "invalid",
                f"too many query parameters (over {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS})",
            )
        for name, values in parameters:
            if "\x00" in name or any("\x00" in value for value in values):
                return error_response(
                    request,
                    400,
                    "invalid",
                    f"query parameter {name.replace(chr(0), '')!r} contains a NUL character",
                    {"field": name.replace("\x00", "")},
                )
        if length and request.method in ("POST", "PUT", "PATCH", "DELETE"):
            body = request.body  # within the limit: safe to read, and cached for the view
            if _looks_like_json(request, body) and json_depth_exceeds(body):
                return error_response(
                    request,
                    400,
                    "too_deep",
                    f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels",
                    {"max_depth": MAX_JSON_DEPTH},
                )
        return None

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> HttpResponse | None:
        view_class = getattr(view, "cls", None)  # DRF's as_view() names its class
        if view_class is None or not request.GET or request.method not in ("GET", "HEAD"):
            return None
        if not hasattr(view_class, "get"):
            return None  # a POST-only endpoint: the view answers 405 and its Allow header
        known: frozenset[str] | None = getattr(view_class, "query_parameters", frozenset())
        if known is None:
            return None
        unknown = sorted(set(request.GET) - known - {"format"})
        if not unknown:
            return None
        name = unknown[0]
        near = nearest_name(name, sorted(known))
        takes = ", ".join(sorted(known)) if known else "no query parameters"
        hint = f" — did you mean {near}?" if near else ""
        return error_response(
            request,
            400,
            "unknown_parameter",
            f"unknown query parameter {name!r}{hint} ({request.path} takes {takes})",
            {"unknown": unknown, "parameters": sorted(known)},
        )

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, RequestDataTooBig):
            return error_response(request, 413, "body_too_large", "the request body is too large")
        if isinstance(exception, TooManyFieldsSent):
            return error_response(request, 400, "invalid", "the request has too many fields")
        return None


class FriendlyNotFoundMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            resolve(request.path_info)
        except Resolver404:
            # CommonMiddleware (outside this one) still turns it into an APPEND_SLASH redirect.
            return not_found(request)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Http404):
            return not_found(request, exception)
        return None
