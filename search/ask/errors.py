"""What ``/api/ask`` raises: a leaf module, so the API's error table can name it without
loading the search stack (the Celery worker runs Django's checks, which import the API)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from search.ask.service import AskResult


class AskFailed(Exception):
    """The model could not answer; ``result`` holds what was retrieved (never an answer)."""

    def __init__(self, code: str, message: str, result: AskResult) -> None:
        super().__init__(message)
        self.code = code  # "model_unavailable" | "model_busy" | "model_bad_response"
        self.message = message
        self.result = result
