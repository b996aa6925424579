"""Why the indexing services refuse a change, in the domain's words (no HTTP here).

Each class names the API's status for it (``http_status``, read by ``reposearch.api_errors``);
the admin and the commands catch ``RepositoryRefused`` and show ``message``.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from reposearch.domain_errors import DomainError


class RepositoryRefused(DomainError):
    """A repository cannot be added or changed as asked.

    ``code`` is stable for clients (``invalid_branch``, ``duplicate`` ...), ``message`` is a
    sentence a person can act on, ``details`` holds ids or limits a client may use.
    """

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


class InvalidRepositoryInput(RepositoryRefused):
    """The URL, branch or name is not acceptable as given."""


class DuplicateRepository(RepositoryRefused):
    """The same repository (URL and branch) is already indexed; ``details`` names it."""

    http_status = HTTPStatus.CONFLICT


class RepositoryLimitReached(RepositoryRefused):
    """``REPO_SEARCH_MAX_REPOS`` repositories exist already."""

    http_status = HTTPStatus.CONFLICT


class RepositoryCheckUnavailable(RepositoryRefused):
    """The URL could not be checked right now (a temporary DNS failure); worth retrying."""

    http_status = HTTPStatus.SERVICE_UNAVAILABLE


class VisibilityChangeRefused(RepositoryRefused):
    """Who may see a repository is an administrator's decision; the actor is not one."""

    http_status = HTTPStatus.FORBIDDEN
