"""The base class of the exceptions services raise, and how the API answers each of them.

A leaf module: it imports nothing of ours. An app's exception derives from ``DomainError``
and says its HTTP status beside its definition; the API's error handler
(``reposearch.api_errors``) answers every ``DomainError`` from these attributes, so the
handler imports no app (and loading the API does not load the search stack).
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, ClassVar


class DomainError(Exception):
    """A refusal in the domain's words; the admin and the commands show ``message``.

    ``http_status`` is the API's status (``http_status_by_code`` when it varies with
    ``code``). The answer's code, message and details are the exception's ``code``,
    ``message`` and ``details`` unless a subclass overrides ``api_code``, ``api_message``
    or ``api_details``; a ``retry_after`` (seconds) becomes the answer's ``Retry-After``. A subclass's attributes win over its parents'.
    """

    http_status: ClassVar[int] = HTTPStatus.BAD_REQUEST
    http_status_by_code: ClassVar[Mapping[str, int]] = {}

    def api_code(self) -> str:
        return str(getattr(self, "code", "invalid"))

    def api_message(self) -> str:
        return str(getattr(self, "message", None) or self)

    def api_details(self) -> dict[str, Any]:
        return dict(getattr(self, "details", {}))

    def api_status(self) -> int:
        return int(self.http_status_by_code.get(self.api_code(), self.http_status))

    def api_headers(self) -> dict[str, str]:
        """Headers of the answer: ``Retry-After`` when the error has a ``retry_after``
        (seconds), as DRF's own throttles answer."""
        retry_after = getattr(self, "retry_after", None)
        return {"Retry-After": str(int(retry_after))} if retry_after is not None else {}
