"""The Tokens page: one's own API tokens, listed, created (the secret shown once) and revoked.

The page renders no token data: ``tokens.js`` reads and changes them through the API
(``GET/POST /api/tokens``, ``DELETE /api/tokens/{id}``), so the secret of a new token exists
only in the one response that created it and in the page that asked for it.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.roles import ROLE_NAMES, Role, role_of
from accounts.tokens import MAX_EXPIRY_DAYS
from frontend.access import account_page


@require_GET
@account_page
def tokens_page(request: HttpRequest) -> HttpResponse:
    held = role_of(request.user) or Role.READ
    return render(
        request,
        "frontend/tokens.html",
        {
            "page": "tokens",
            # A token never exceeds its user's role: offer only the scopes up to it.
            "scopes": [name for name in ROLE_NAMES if Role.parse(name) <= held],
            "max_expiry_days": MAX_EXPIRY_DAYS,
        },
    )
