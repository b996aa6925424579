"""The one domain error of the query language and the exact engine (a 400, or a 404 for names)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from reposearch.domain_errors import DomainError


class QueryRejected(DomainError, ValueError):
    """A query the search cannot run: bad syntax, an invalid regex, an unknown repository name.

    ``code`` is the API error code, ``details`` says where (``position``) and what (``token``).
    """

    http_status_by_code = {"unknown_repository": HTTPStatus.NOT_FOUND}

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
