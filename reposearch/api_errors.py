"""One error shape for the whole API: ``{"error": {"code", "message", "details"}}``.

DRF's validation errors, 404s, parse errors and throttling all come out in this shape with the
right status; services raise domain exceptions, which ``DOMAIN_ERRORS`` maps to statuses;
anything unexpected becomes a 500 in the same shape with no internals leaked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from indexing.exceptions import (
    DuplicateRepository,
    RepositoryCheckUnavailable,
    RepositoryLimitReached,
    RepositoryRefused,
    VisibilityChangeRefused,
)
from indexing.repository_refs import AmbiguousRepository, RepositoryNotFound
from indexing.webhooks.providers import BadSignature, WebhookRejected
from search.ask.errors import AskFailed
from search.exact.errors import QueryRejected
from search.retrieval.globs import InvalidGlob
from search.retrieval.scope import UnknownBranch, UnknownRepositories

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


@dataclass(frozen=True)
class DomainError:
    """How one domain exception is answered: its status (per ``code`` when it varies), and the
    code and details when the exception does not carry them itself."""

    status: int
    status_by_code: Mapping[str, int] = field(default_factory=dict)
    code: str | None = None
    details: Callable[[Any], dict[str, Any]] | None = None
    message_prefix: str = ""


def _ask_failure_details(exc: AskFailed) -> dict[str, Any]:
    body = exc.result.as_dict()
    return {"sources": exc.result.retrieved, "trace": body["trace"], "timings": body["timings"]}


# The one table from domain exceptions to HTTP statuses; the most specific class wins.
DOMAIN_ERRORS: dict[type[Exception], DomainError] = {
    RepositoryRefused: DomainError(status.HTTP_400_BAD_REQUEST),
    DuplicateRepository: DomainError(status.HTTP_409_CONFLICT),
    RepositoryLimitReached: DomainError(status.HTTP_409_CONFLICT),
    RepositoryCheckUnavailable: DomainError(status.HTTP_503_SERVICE_UNAVAILABLE),
    VisibilityChangeRefused: DomainError(status.HTTP_403_FORBIDDEN),
    WebhookRejected: DomainError(status.HTTP_400_BAD_REQUEST),
    RepositoryNotFound: DomainError(status.HTTP_404_NOT_FOUND),
    AmbiguousRepository: DomainError(status.HTTP_400_BAD_REQUEST),
    BadSignature: DomainError(status.HTTP_401_UNAUTHORIZED),
    UnknownRepositories: DomainError(
        status.HTTP_404_NOT_FOUND,
        code="unknown_repository",
        details=lambda exc: {"repo_ids": [str(i) for i in exc.ids]},
    ),
    UnknownBranch: DomainError(
        status.HTTP_404_NOT_FOUND,
        code="unknown_branch",
        details=lambda exc: {"branches": list(exc.branches)},
    ),
    InvalidGlob: DomainError(
        status.HTTP_400_BAD_REQUEST,
        code="invalid",
        details=lambda exc: {"field": "paths"},
        message_prefix="paths: ",
    ),
    QueryRejected: DomainError(
        status.HTTP_400_BAD_REQUEST,
        status_by_code={"unknown_repository": status.HTTP_404_NOT_FOUND},
    ),
    # The database is down or unreachable (a restart, a network cut): nothing the caller did.
    OperationalError: DomainError(
        status.HTTP_503_SERVICE_UNAVAILABLE,
        code="database_unavailable",
        details=lambda exc: {},
        message_prefix="the database is unavailable right now; try again shortly",
    ),
    InterfaceError: DomainError(
        status.HTTP_503_SERVICE_UNAVAILABLE,
        code="database_unavailable",
        details=lambda exc: {},
        message_prefix="the database is unavailable right now; try again shortly",
    ),
    AskFailed: DomainError(
        status.HTTP_503_SERVICE_UNAVAILABLE,
        status_by_code={
            "model_unavailable": status.HTTP_503_SERVICE_UNAVAILABLE,
            "model_busy": status.HTTP_503_SERVICE_UNAVAILABLE,
            "model_bad_response": status.HTTP_502_BAD_GATEWAY,
        },
        details=_ask_failure_details,
    ),
}


def domain_error_response(exc: Exception) -> Response | None:
    """The API's answer to a domain exception, or None when the table does not know it."""
    mapping = next((DOMAIN_ERRORS[cls] for cls in type(exc).__mro__ if cls in DOMAIN_ERRORS), None)
    if mapping is None:
        return None
    code = mapping.code or str(getattr(exc, "code", "invalid"))
    if isinstance(exc, OperationalError | InterfaceError):
        logger.warning("database unavailable: %s", exc)
        message = mapping.message_prefix  # the driver's text names hosts and ports: not for callers
    else:
        message = mapping.message_prefix + str(getattr(exc, "message", None) or exc)
    details = mapping.details(exc) if mapping.details else dict(getattr(exc, "details", {}))
    return Response(
        error_body(code, message, details), mapping.status_by_code.get(code, mapping.status)
    )


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
    response.data = error_body(code, message, details)
    return response
