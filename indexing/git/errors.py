"""Errors raised by the git layer, split into user errors and transient ones.

A caller (the Celery clone task) fails the job at once for a user error and retries
with backoff when `error.transient` is True. Messages are plain sentences meant for
the user; they never contain credentials or tokens.
"""

from __future__ import annotations


class GitFetchError(Exception):
    """A fetch failed. `transient` says whether retrying later may succeed."""

    transient: bool = False

    def __init__(self, message: str, *, transient: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if transient is not None:
            self.transient = transient

    def __str__(self) -> str:
        return self.message


class HostRefused(GitFetchError):
    """The URL or one of the hosts it led to was refused by the URL policy."""


class HostNotFound(GitFetchError):
    """The host name does not resolve (a temporary DNS failure is transient)."""


class RepositoryNotFound(GitFetchError):
    """The server answered 404 / "no such repository"."""


class AuthenticationFailed(GitFetchError):
    """The server refused access (HTTP 401/403): missing or wrong token."""


class BranchNotFound(GitFetchError):
    """The requested branch does not exist on the remote."""


class EmptyRepository(GitFetchError):
    """The remote has no commits (no HEAD)."""


class RepositoryTooLarge(GitFetchError):
    """The transfer passed the size limit; it was stopped there."""

    def __init__(self, message: str, *, received_bytes: int, limit_bytes: int) -> None:
        super().__init__(message, transient=False)
        self.received_bytes = received_bytes
        self.limit_bytes = limit_bytes


class FetchTimeout(GitFetchError):
    """The transfer did not finish within the clone timeout.

    Not transient by default: a repository that does not fit in the time limit will
    not fit next time either. A connect timeout is reported as `ServerUnavailable`.
    """


class UnsupportedServer(GitFetchError):
    """The server speaks something we refuse (dumb HTTP, sha256 repositories, ...)."""


class ServerUnavailable(GitFetchError):
    """Connection refused/reset, 5xx, protocol hang-up: worth retrying."""

    transient = True
