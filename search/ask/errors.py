"""What ``/api/ask`` raises: a leaf module, so importing it does not load the search stack
(the Celery worker runs Django's checks, which import the API)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Protocol

from reposearch.domain_errors import DomainError


class RetrievedSoFar(Protocol):
    """What a failed answer still reports (``search.ask.service.AskResult``): the snippets
    retrieved for the model, and the whole result as the API's body."""

    @property
    def retrieved(self) -> list[dict[str, Any]]: ...

    def as_dict(self) -> dict[str, Any]: ...


class AskFailed(DomainError):
    """The model could not answer; ``result`` holds what was retrieved (never an answer)."""

    http_status = HTTPStatus.SERVICE_UNAVAILABLE
    http_status_by_code = {
        "model_unavailable": HTTPStatus.SERVICE_UNAVAILABLE,
        "model_busy": HTTPStatus.SERVICE_UNAVAILABLE,
        "model_bad_response": HTTPStatus.BAD_GATEWAY,
    }

    def __init__(self, code: str, message: str, result: RetrievedSoFar) -> None:
        super().__init__(message)
        self.code = code  # "model_unavailable" | "model_busy" | "model_bad_response"
        self.message = message
        self.result = result

    def api_details(self) -> dict[str, Any]:
        body = self.result.as_dict()
        return {
            "sources": self.result.retrieved,
            "trace": body["trace"],
            "timings": body["timings"],
        }
