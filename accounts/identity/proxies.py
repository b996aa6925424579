"""Trusted reverse proxies: which peers may speak for a user, and who the client really is.

``REPO_SEARCH_TRUSTED_PROXIES`` lists the addresses (IPs or CIDRs) of the reverse proxies in
front of reposearch; empty trusts nobody. Only a request whose TCP peer (``REMOTE_ADDR``) is one
of them may name a user in ``REPO_SEARCH_REMOTE_USER_HEADER`` (``remote_user``), and only its
``X-Forwarded-For`` / ``X-Forwarded-Proto`` are believed: ``TrustedProxyMiddleware`` then sets
``REMOTE_ADDR`` to the client (for the audit log and throttles) and the scheme to the one the
client used (for https redirect URIs and secure cookies), remembering the proxy's own address.

This is why uvicorn runs with ``--no-proxy-headers`` (reposearch/processes.py): uvicorn would
otherwise believe ``X-Forwarded-For`` from any local process and hand Django an address of the
sender's choosing, which a trusted-proxy check on ``REMOTE_ADDR`` could not tell apart.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# The trusted proxy's own address, kept on the request once REMOTE_ADDR names the client.
PROXY_ADDRESS_ATTR = "reposearch_proxy_address"


def parse_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """IPs and CIDRs as networks; ``ValueError`` naming the first entry that is neither."""
    networks: list[Network] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or a CIDR range") from None
    return tuple(networks)


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return parse_networks(entries)


def trusted_networks() -> tuple[Network, ...]:
    return _networks(tuple(getattr(settings, "REPO_SEARCH_TRUSTED_PROXIES", ())))


def _address(value: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not value:
        return None
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped  # ::ffff:10.0.0.1 from a dual-stack socket is 10.0.0.1
    return address


def is_trusted_address(value: str | None) -> bool:
    """Whether ``value`` (an IP address as text) is inside ``REPO_SEARCH_TRUSTED_PROXIES``."""
    address = _address(value)
    return address is not None and any(address in network for network in trusted_networks())


def came_through_trusted_proxy(request: HttpRequest) -> bool:
    """Whether the request's TCP peer is a trusted proxy."""
    if hasattr(request, PROXY_ADDRESS_ATTR):
        return True
    return is_trusted_address(request.META.get("REMOTE_ADDR"))


def client_address(forwarded_for: str, peer: str) -> str:
    """The client in ``X-Forwarded-For``: the last hop that is not itself a trusted proxy.

    Proxies append the address they received from, so everything left of the last untrusted
    hop was written by the client and proves nothing; a malformed hop ends the walk there.
    """
    client = peer
    for hop in reversed([part.strip() for part in forwarded_for.split(",")]):
        address = _address(hop)
        if address is None:
            break
        client = str(address)
        if not is_trusted_address(client):
            break
    return client


class TrustedProxyMiddleware:
    """Believes ``X-Forwarded-For`` / ``-Proto`` from trusted proxies, and from nobody else."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        peer = request.META.get("REMOTE_ADDR") or ""
        if is_trusted_address(peer):
            setattr(request, PROXY_ADDRESS_ATTR, peer)
            forwarded_for = request.META.get("HTTP_X_FORWARDED_FOR", "")
            if forwarded_for:
                request.META["REMOTE_ADDR"] = client_address(forwarded_for, peer)
            proto = request.META.get("HTTP_X_FORWARDED_PROTO", "").strip().lower()
            if proto in ("http", "https"):
                _set_scheme(request, proto)
        return self.get_response(request)


def _set_scheme(request: HttpRequest, scheme: str) -> None:
    scope = getattr(request, "scope", None)  # ASGIRequest: the scheme comes from the scope
    if isinstance(scope, dict):
        scope["scheme"] = scheme
    request.META["wsgi.url_scheme"] = scheme  # WSGIRequest: from the environ (= META)
