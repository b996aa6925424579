"""One error shape for the whole API: ``{"error": {"code", "message", "details"}}``.

DRF's validation errors, 404s, parse errors and throttling all come out in this shape with the
right status; services raise domain exceptions (``reposearch.domain_errors.DomainError``), each
naming its own status, so this module imports no app; anything unexpected becomes a 500 in the
same shape with no internals leaked.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from reposearch.domain_errors import DomainError

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An error a service raises for the API to report as-is (message, code and status)."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "invalid",
        status_code: int = status.HTTP_400_BAD_REQUEST,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.error_code = code
        self.details = details or {}


# The database is down or unreachable (a restart, a network cut): nothing the caller did.
DATABASE_UNAVAILABLE = "the database is unavailable right now; try again shortly"


def domain_error_response(exc: Exception) -> Response | None:
    """The API's answer to a domain exception, or None when it is not one."""
    if isinstance(exc, DomainError):
        return Response(
            error_body(exc.api_code(), exc.api_message(), exc.api_details()),
            exc.api_status(),
            headers=exc.api_headers(),
        )
    if isinstance(exc, OperationalError | InterfaceError):
        logger.warning("database unavailable: %s", exc)
        # The driver's text names hosts and ports: not for callers.
        return Response(
            error_body("database_unavailable", DATABASE_UNAVAILABLE),
            status.HTTP_503_SERVICE_UNAVAILABLE,
        )
    return None


def _first_message(detail: Any) -> str:
    """A readable one-line summary of DRF's nested error details."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            inner = _first_message(value)
            return inner if key == "non_field_errors" else f"{key}: {inner}"
        return "invalid input"
    if isinstance(detail, list):
        return _first_message(detail[0]) if detail else "invalid input"
    return str(detail)


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, ApiError):
        return Response(error_body(exc.error_code, str(exc.detail), exc.details), exc.status_code)
    domain = domain_error_response(exc)
    if domain is not None:
        return domain
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = exception_handler(exc, context)
    if response is None:
        logger.exception("unhandled API error", extra={"view": type(context.get("view")).__name__})
        return Response(
            error_body("internal_error", "internal error; the server log has the details"),
            status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    assert isinstance(exc, exceptions.APIException)
    if isinstance(exc, exceptions.ValidationError):
        code, details = "invalid", {"fields": exc.detail}
        message = _first_message(exc.detail)
    else:
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else "error"
        details = {}
        message = _first_message(exc.detail)
        view = context.get("view")
        if isinstance(exc, exceptions.MethodNotAllowed) and view is not None:
            allowed = [m for m in view.allowed_methods if m not in ("HEAD", "OPTIONS")]
            message = f"{message} Use {' or '.join(allowed)}."
    response.data = error_body(code, message, details)
    return response
