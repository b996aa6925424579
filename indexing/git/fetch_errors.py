"""Turning whatever dulwich/urllib3/socket raised into one of our `GitFetchError`s.

The rule of thumb: what the user can fix (wrong URL, private repository, missing branch,
too large, too slow) is permanent; what the network or the server may fix by itself
(reset connections, 5xx, temporary DNS failures) is transient. Messages name the host
(never the userinfo) and never include the raw exception text of the HTTP layer, which
could echo request details.
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Iterator

from dulwich.client import HTTPUnauthorized
from dulwich.errors import GitProtocolError, HangupException, NotGitRepository

from indexing.git.disk_space import no_space_left
from indexing.git.errors import (
    AuthenticationFailed,
    GitFetchError,
    HostNotFound,
    HostRefused,
    RepositoryNotFound,
    RepositoryTooLarge,
    ServerUnavailable,
)
from indexing.git.hostile import corrupt_object, refused_redirect
from indexing.git.transport import TransferGuard
from indexing.git.url_safety import CheckedUrl, UnsafeRepositoryUrl

_HTTP_STATUS = re.compile(r"unexpected http resp (\d{3})")
_NOT_FOUND_WORDS = (
    "not found",
    "not exported",
    "no such repository",
    "does not appear to be a git repository",
    "no git repository",
)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes/contexts and urllib3's `MaxRetryError.reason`."""
    seen: set[int] = set()
    stack = [exc]
    while stack and len(seen) < 20:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for nxt in (
            getattr(current, "reason", None),
            current.__cause__,
            current.__context__,
        ):
            if isinstance(nxt, BaseException):
                stack.append(nxt)


def classify_fetch_error(
    exc: BaseException, guard: TransferGuard, checked: CheckedUrl
) -> GitFetchError:
    """Map `exc` to a `GitFetchError`; our own errors are returned unchanged."""
    if isinstance(exc, RepositoryTooLarge):
        return exc
    full = no_space_left(_chain(exc))
    if full is not None:
        return full
    if guard.expired or guard.remaining_s() == 0.0:
        # Whatever the symptom (reset, hang-up, EOF, a socket's read timeout, which is as long
        # as the whole clone's and may fire before the watchdog does), the deadline caused it.
        return guard.timeout_error()
    if isinstance(exc, GitFetchError):
        return exc
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        raise exc
    host = checked.host or checked.url
    chain = list(_chain(exc))

    for item in chain:
        if isinstance(item, GitFetchError):
            return item
        if isinstance(item, UnsafeRepositoryUrl):
            # A redirect or a re-resolution led somewhere the policy refuses.
            if item.message.startswith(("host not found", "DNS lookup")):
                return HostNotFound(item.message, transient=item.transient)
            return HostRefused(item.message)
        if isinstance(item, NotGitRepository):
            return RepositoryNotFound("repository not found (HTTP 404)")
        if isinstance(item, HTTPUnauthorized):
            return AuthenticationFailed(
                "access denied (HTTP 401): the repository is private or the token is wrong"
            )

    hostile = refused_redirect(chain) or corrupt_object(chain)
    if hostile is not None:
        return hostile

    for item in chain:
        if isinstance(item, GitProtocolError) and not isinstance(item, HangupException):
            text = str(item)
            status_match = _HTTP_STATUS.search(text)
            if status_match:
                return _from_http_status(int(status_match.group(1)), host)
            lowered = text.lower()
            if any(word in lowered for word in _NOT_FOUND_WORDS):
                return RepositoryNotFound("repository not found")
            if "access denied" in lowered:
                return AuthenticationFailed("access denied by the server")

    for item in chain:
        name = type(item).__name__
        if isinstance(item, ssl.SSLCertVerificationError) or name == "SSLCertVerificationError":
            return GitFetchError(f"TLS certificate verification failed for {host}")
        if name == "NameResolutionError" or isinstance(item, socket.gaierror):
            return HostNotFound(f"host not found: {host}")
        if name == "ConnectTimeoutError":
            return ServerUnavailable(f"could not connect to {host}: timed out")
        if isinstance(item, ConnectionRefusedError):
            return ServerUnavailable(f"could not connect to {host}: connection refused")
        if name == "ReadTimeoutError" or isinstance(item, TimeoutError | socket.timeout):
            return ServerUnavailable(f"{host} stopped responding")
        if isinstance(item, ConnectionError | HangupException) or name in (
            "ProtocolError",
            "IncompleteRead",
            "NewConnectionError",
        ):
            return ServerUnavailable(f"the connection to {host} was lost")
        if isinstance(item, ssl.SSLError):
            return ServerUnavailable(f"TLS error talking to {host}")
        if isinstance(item, AttributeError) and _closed_under_the_http_client(item):
            return ServerUnavailable(f"the connection to {host} was lost")

    return GitFetchError(f"fetch from {host} failed ({type(exc).__name__})", transient=True)


def _closed_under_the_http_client(exc: AttributeError) -> bool:
    """The HTTP client used a connection whose socket was closed under it (urllib3 2.x reads
    ``self.sock.settimeout`` after another thread's ``close()`` set the socket to None: "'NoneType'
    object has no attribute 'settimeout'"). Only when raised inside urllib3 or ``http.client``
    on None, so an ``AttributeError`` of our own code still reads as one."""
    if not str(exc).startswith("'NoneType' object has no attribute"):
        return False
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = tb.tb_frame.f_code.co_filename.replace("\\", "/")
    return "/urllib3/" in filename or filename.endswith("/http/client.py")


def _from_http_status(status: int, host: str) -> GitFetchError:
    if status in (401, 403):
        return AuthenticationFailed(
            f"access denied (HTTP {status}): the repository is private or the token is wrong"
        )
    if status in (404, 410):
        return RepositoryNotFound(f"repository not found (HTTP {status})")
    if status in (408, 429) or status >= 500:
        return ServerUnavailable(f"{host} answered HTTP {status}; try again later")
    return GitFetchError(f"{host} answered HTTP {status}")
