"""Per-account request budgets (DRF throttles): search, ask and writes.

Rates come from settings at every request (``REPO_SEARCH_THROTTLE_*``, e.g. ``"120/min"``), so
an operator's change needs no code. Counts live in Django's cache (Redis under ``make up``); if
the cache cannot be reached, requests are let through rather than failed — a budget is a
guard against floods, not a reason for an outage. Over budget: 429 with ``Retry-After``.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from accounts.permissions import required_role
from accounts.roles import Role

logger = logging.getLogger(__name__)


class AccountRateThrottle(SimpleRateThrottle):
    """A budget per account (per address for anonymous reads) for one kind of request."""

    setting = ""

    def __init__(self) -> None:  # the rate is read per request, not at import
        pass

    def allow_request(self, request: Request, view: Any) -> bool:
        if not self.applies_to(request, view):
            return True
        self.rate = getattr(settings, self.setting)
        self.num_requests, self.duration = self.parse_rate(self.rate)
        try:
            return super().allow_request(request, view)
        except Exception as error:  # cache down: let the request through
            logger.warning("throttle %s skipped: %s", self.scope, type(error).__name__)
            return True

    def applies_to(self, request: Request, view: Any) -> bool:
        return True

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if request.user is not None and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"address-{self.get_ident(request)}"
        return f"throttle:{self.scope}:{ident}"


class SearchRateThrottle(AccountRateThrottle):
    scope = "search"
    setting = "REPO_SEARCH_THROTTLE_SEARCH"


class AskRateThrottle(AccountRateThrottle):
    scope = "ask"
    setting = "REPO_SEARCH_THROTTLE_ASK"


class WriteRateThrottle(AccountRateThrottle):
    """Every write of every endpoint shares one budget per account."""

    scope = "write"
    setting = "REPO_SEARCH_THROTTLE_WRITES"

    def applies_to(self, request: Request, view: Any) -> bool:
        return required_role(view, request.method or "GET") >= Role.WRITE
