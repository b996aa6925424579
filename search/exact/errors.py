"""The one domain error of the query language and the exact engine (a 400, or a 404 for names)."""

from __future__ import annotations

from typing import Any


class QueryRejected(ValueError):
    """A query the search cannot run: bad syntax, an invalid regex, an unknown repository name.

    ``code`` is the API error code, ``details`` says where (``position``) and what (``token``).
    """

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
