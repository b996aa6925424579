"""Deciding whether a repository URL may be fetched (SSRF guard).

`check_repository_url` is called when a repository is added (so the user gets a clear
400 at once) and again by the fetch itself. The decision is made on the *resolved*
addresses, never on the spelling: `http://0x7f.1/`, `http://2130706433/`,
`http://[::ffff:127.0.0.1]/` and names that resolve to private space are all refused
unless the operator allows private hosts.

DNS rebinding: a name can resolve to a public address when checked and to 127.0.0.1 a
moment later. The fetch therefore never lets the HTTP/git client resolve names itself:
every socket it opens (including redirects to other hosts) goes through
`resolve_allowed_addresses` and connects to the address that was just checked
(see `indexing.git.transport`). There is no second lookup between check and connect.

Only https, http and git:// are supported. ssh is refused (the server holds no keys,
and ssh would resolve and connect outside our guard). Credentials in the URL are
refused: the stored URL must never hold a secret; tokens come from configuration.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

SUPPORTED_SCHEMES = ("https", "http", "git")
DEFAULT_PORTS = {"https": 443, "http": 80, "git": 9418}

Resolver = Callable[..., Sequence[tuple[Any, ...]]]
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# NAT64 prefix: the translator would connect to the embedded IPv4 address.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class UnsafeRepositoryUrl(ValueError):
    """The URL is malformed, unsupported or points somewhere we refuse to go.

    `transient` is True only for a temporary DNS failure (worth retrying later).
    The message never contains credentials.
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient


@dataclass(frozen=True)
class CheckedUrl:
    """A repository location that passed the policy checks."""

    url: str  # normalized, without credentials, query or fragment; safe to store and log
    scheme: str  # "https", "http", "git" or "file"
    host: str | None  # lowercase host name or IP literal; None for local paths
    port: int | None  # explicit or default port; None for local paths
    addresses: tuple[str, ...]  # resolved addresses that were checked (empty for local)
    display_name: str  # e.g. "org/repo"
    local_path: str | None = None  # absolute path for local mirrors


def is_public_address(address: str | IpAddress) -> bool:
    """True if connecting to `address` reaches the public internet.

    IPv4-mapped (::ffff:a.b.c.d), 6to4, Teredo and NAT64 addresses are judged by the
    IPv4 address they embed.
    """
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return is_public_address(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            return is_public_address(ip.sixtofour)
        if ip.teredo is not None:
            return is_public_address(ip.teredo[1])
        if ip in _NAT64:
            return is_public_address(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return bool(
        ip.is_global
        and not ip.is_multicast
        and not ip.is_reserved
        and not ip.is_unspecified
        and not ip.is_loopback
        and not ip.is_link_local
        and not ip.is_private
    )


def resolve_allowed_addresses(
    host: str,
    port: int,
    *,
    allow_private_hosts: bool,
    resolve: Resolver = socket.getaddrinfo,
) -> list[tuple[int, tuple[Any, ...]]]:
    """Resolve `host` once and return `(family, sockaddr)` pairs that may be connected to.

    Refuses the host if ANY of its addresses is non-public (a name with one public and
    one private address is refused: the client could pick either). Raises
    `UnsafeRepositoryUrl`.
    """
    try:
        infos = resolve(host, port, 0, socket.SOCK_STREAM)
    except socket.gaierror as exc:
        if exc.errno in (socket.EAI_AGAIN,):
            raise UnsafeRepositoryUrl(
                f"DNS lookup for {host} failed temporarily; try again later", transient=True
            ) from None
        raise UnsafeRepositoryUrl(f"host not found: {host}") from None
    except (UnicodeError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.EAGAIN,):
            raise UnsafeRepositoryUrl(
                f"DNS lookup for {host} failed temporarily; try again later", transient=True
            ) from None
        raise UnsafeRepositoryUrl(f"host not found: {host}") from None

    allowed: list[tuple[int, tuple[Any, ...]]] = []
    for family, _type, _proto, _canon, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        text = str(sockaddr[0]).split("%", 1)[0]  # drop an IPv6 zone id
        try:
            ip = ipaddress.ip_address(text)
        except ValueError:
            raise UnsafeRepositoryUrl(f"host refused: unusable address {text}") from None
        if ip.is_unspecified or ip.is_multicast:
            # Never a git server, even on a private network (so no setting is named).
            raise UnsafeRepositoryUrl(f"host refused: resolves to a non-unicast address {ip}")
        if not allow_private_hosts and not is_public_address(ip):
            raise UnsafeRepositoryUrl(
                f"host refused: resolves to a private address {ip} (set"
                " REPO_SEARCH_ALLOW_PRIVATE_HOSTS=1 for a git server on your own network)"
            )
        allowed.append((family, (str(ip), port, *sockaddr[2:])))
    if not allowed:
        raise UnsafeRepositoryUrl(f"host not found: {host}")
    return allowed


def check_repository_url(
    url: str,
    *,
    allow_private_hosts: bool,
    allow_local_paths: bool,
    resolve: Resolver = socket.getaddrinfo,
) -> CheckedUrl:
    """Validate a repository URL or local path; return its normalized form.

    Raises `UnsafeRepositoryUrl` with a plain message the user can act on.
    """
    if not isinstance(url, str) or not url.strip():
        raise UnsafeRepositoryUrl("the repository URL is empty")
    url = url.strip()
    if len(url) > 2048:
        raise UnsafeRepositoryUrl("the repository URL is too long (over 2048 characters)")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F or ch.isspace() for ch in url):
        raise UnsafeRepositoryUrl("the repository URL contains spaces or control characters")

    if "://" not in url:
        scheme_like = url.split(":", 1)[0]
        if ":" in url and "/" not in scheme_like and not _looks_like_host(scheme_like):
            raise UnsafeRepositoryUrl(
                f"scheme {scheme_like.lower()!r} is not supported; use https, http or git"
            )
        if _looks_like_scp(url):
            raise UnsafeRepositoryUrl(
                "ssh URLs are not supported; use an https URL "
                "(with REPO_SEARCH_GIT_TOKEN for private repositories)"
            )
        return _check_local_path(url, allow_local_paths)

    try:
        parts = urlsplit(url)
    except ValueError:
        raise UnsafeRepositoryUrl("the repository URL is malformed") from None
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise UnsafeRepositoryUrl("file:// URLs must not name a host")
        return _check_local_path(parts.path, allow_local_paths)
    if scheme in ("ssh", "git+ssh", "ssh+git"):
        raise UnsafeRepositoryUrl(
            "ssh URLs are not supported; use an https URL "
            "(with REPO_SEARCH_GIT_TOKEN for private repositories)"
        )
    if scheme not in SUPPORTED_SCHEMES:
        raise UnsafeRepositoryUrl(f"scheme {scheme!r} is not supported; use https, http or git")
    if "@" in parts.netloc:
        raise UnsafeRepositoryUrl(
            "credentials in the URL are not allowed; "
            "configure REPO_SEARCH_GIT_TOKEN for private repositories"
        )
    if parts.query:
        raise UnsafeRepositoryUrl("query strings are not supported in repository URLs")

    host = _normalize_host(parts.hostname)
    try:
        port = parts.port
    except ValueError:
        raise UnsafeRepositoryUrl("the port in the repository URL is invalid") from None
    if port == 0:
        raise UnsafeRepositoryUrl("the port in the repository URL is invalid")
    effective_port = port or DEFAULT_PORTS[scheme]

    path = parts.path.rstrip("/")
    if not path or path == "/":
        raise UnsafeRepositoryUrl("the repository URL has no repository path")
    if any(segment in ("..", ".") for segment in path.split("/")):
        raise UnsafeRepositoryUrl("the repository path must not contain '.' or '..' segments")

    allowed = resolve_allowed_addresses(
        host, effective_port, allow_private_hosts=allow_private_hosts, resolve=resolve
    )

    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    normalized = urlunsplit((scheme, netloc, path, "", ""))
    return CheckedUrl(
        url=normalized,
        scheme=scheme,
        host=host,
        port=effective_port,
        addresses=tuple(dict.fromkeys(sockaddr[0] for _family, sockaddr in allowed)),
        display_name=_display_name(path),
    )


def _looks_like_scp(location: str) -> bool:
    """git's rule: `[user@]host:path` when a colon comes before any slash."""
    colon = location.find(":")
    slash = location.find("/")
    return colon > 0 and (slash == -1 or colon < slash)


def _looks_like_host(text: str) -> bool:
    host = text.rsplit("@", 1)[-1]
    return "@" in text or "." in host or host == "localhost" or host.startswith("[")


def _normalize_host(hostname: str | None) -> str:
    if not hostname:
        raise UnsafeRepositoryUrl("the repository URL has no host")
    host = hostname.rstrip(".").lower()
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise UnsafeRepositoryUrl(f"the host name {hostname!r} is invalid") from None
    if not host or len(host) > 253:
        raise UnsafeRepositoryUrl("the host name is invalid")
    return host


def _display_name(path: str) -> str:
    cleaned = path.strip("/")
    if cleaned.endswith(".git"):
        cleaned = cleaned[: -len(".git")]
    return cleaned.rstrip("/") or "repository"


def _check_local_path(path: str, allow_local_paths: bool) -> CheckedUrl:
    if not os.path.isabs(path):
        # A relative path (or "~") would resolve against the server's working directory or
        # home, which says nothing to the person who typed it.
        raise UnsafeRepositoryUrl(
            f"{path[:80]!r} is not a URL or absolute path; use https://, http://, git:// "
            "or an absolute local path such as /srv/git/project.git"
        )
    if not allow_local_paths:
        raise UnsafeRepositoryUrl(
            "local paths are not allowed (set REPO_SEARCH_ALLOW_LOCAL_PATHS=1 for local mirrors)"
        )
    absolute = os.path.realpath(path)
    is_bare = os.path.isfile(os.path.join(absolute, "HEAD")) and os.path.isdir(
        os.path.join(absolute, "objects")
    )
    if not is_bare and not os.path.exists(os.path.join(absolute, ".git")):
        # One answer whether the path is missing or holds no repository, naming the path as
        # typed (not resolved through symlinks): an error must not map the server's disk.
        raise UnsafeRepositoryUrl(f"{path[:200]} is not a git repository on this server")
    name = os.path.basename(absolute)
    if name.endswith(".git"):
        name = name[: -len(".git")]
    return CheckedUrl(
        url=urlunsplit(("file", "", absolute, "", "")),
        scheme="file",
        host=None,
        port=None,
        addresses=(),
        display_name=name or "repository",
        local_path=absolute,
    )
