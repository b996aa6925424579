"""Security headers on every response: pages, the API, the admin, static files and errors.

The Content-Security-Policy allows scripts and styles from this site's own files only: no
inline ``<script>``, no ``on…=`` handlers, no ``style=`` attributes or ``<style>`` blocks (the
templates keep to that, and ``tests/frontend/test_security_headers.py`` checks every page).
Images may also be ``data:`` URLs (the favicon and the Swagger UI's icons). Nothing may frame
the site (``frame-ancestors 'none'``), and forms post only back to it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        return response
