"""Why the indexing services refuse a change, in the domain's words (no HTTP here).

The API maps each class to a status in one table (``reposearch.api_errors.DOMAIN_ERRORS``);
the admin and the commands catch ``RepositoryRefused`` and show ``message``.
"""

from __future__ import annotations

from typing import Any


class RepositoryRefused(Exception):
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


class RepositoryLimitReached(RepositoryRefused):
    """``REPO_SEARCH_MAX_REPOS`` repositories exist already."""


class RepositoryCheckUnavailable(RepositoryRefused):
    """The URL could not be checked right now (a temporary DNS failure); worth retrying."""


class VisibilityChangeRefused(RepositoryRefused):
    """Who may see a repository is an administrator's decision; the actor is not one."""
