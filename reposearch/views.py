"""Project-wide error answers: the one JSON error shape under /api/, friendly pages elsewhere.

Used as Django's ``handler400/403/404/500`` and by ``reposearch.request_guards``. The pages show
a plain sentence and links; never a traceback, a setting or the URL patterns.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import TemplateDoesNotExist, loader
from django.utils.functional import SimpleLazyObject

from reposearch.api_errors import error_body

logger = logging.getLogger(__name__)

TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Not found",
    411: "Length required",
    413: "Request too large",
    500: "Something went wrong",
}


def wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def error_response(
    request: HttpRequest,
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
) -> HttpResponse:
    """``{"error": ...}`` with ``status`` under /api/, else the error page saying ``message``."""
    if wants_json(request):
        return JsonResponse(error_body(code, message, details), status=status)
    template = "errors/500.html" if status >= 500 else "errors/page.html"
    if status < 500:
        _attach_user(request)
    context = {"status": status, "title": TITLES.get(status, "Error"), "message": message}
    try:
        # No request context for a 500: whatever failed may fail again in a context processor.
        html: str = loader.render_to_string(template, context, None if status >= 500 else request)
    except TemplateDoesNotExist:
        html = f"{context['title']}: {message}"
    return HttpResponse(html, status=status)


def _attach_user(request: HttpRequest) -> None:
    """The signed-in account on a request answered before ``AuthenticationMiddleware`` ran (an
    unknown route, refused by ``request_guards``), so the page's header shows who is signed in
    instead of "Sign in"."""
    if not hasattr(request, "user") and hasattr(request, "session"):
        request.user = SimpleLazyObject(lambda: get_user(request))  # type: ignore[assignment]


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if wants_json(request):
        return error_response(request, 404, "not_found", f"no such endpoint: {request.path}")
    return error_response(
        request,
        404,
        "not_found",
        "There is no page at this address. It may have moved or the link is mistyped.",
    )


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, 400, "bad_request", "The request could not be understood.")


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, 403, "permission_denied", "You may not open this page.")


def server_error(request: HttpRequest) -> HttpResponse:
    if wants_json(request):
        return error_response(
            request, 500, "internal_error", "internal error; the server log has the details"
        )
    return error_response(
        request,
        500,
        "internal_error",
        "The server hit an error it did not expect. The details are in the server log.",
    )
