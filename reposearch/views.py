"""Project-wide error pages: JSON under /api/, plain pages elsewhere."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from reposearch.api_errors import error_body


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse(
            error_body("not_found", f"no such endpoint: {request.path}"), status=404
        )
    return HttpResponse("Not found", status=404, content_type="text/plain")


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("internal_error", "internal error"), status=500)
    return HttpResponse("Internal error", status=500, content_type="text/plain")
