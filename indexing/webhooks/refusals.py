"""Webhook calls that prove nothing: counted per address, throttled, audited as a count.

The delivery endpoint takes anonymous calls (a git host has no account), so a call that is
unsigned, wrongly signed or for a repository that does not exist must cost little and leave
little: per client address and window (``REPO_SEARCH_WEBHOOK_REFUSAL_WINDOW_SECS``) the calls
are counted in Django's cache; past ``REPO_SEARCH_WEBHOOK_REFUSALS_PER_WINDOW`` the address gets
429 before any repository is looked up; and the audit log gets one ``webhook.refused`` row when
the count reaches 1, 10, 100, 1000 ... (each with the count so far), not a row per call. With
the cache down nothing is throttled or counted (a warning is logged instead of a row per call).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache

from accounts.audit import record
from accounts.models import AuditOutcome

logger = logging.getLogger(__name__)


def _key(address: str | None) -> str:
    return f"webhook:refused:{address or 'unknown'}"


def refusals_so_far(address: str | None) -> int:
    try:
        return int(cache.get(_key(address)) or 0)
    except Exception as error:
        logger.warning("webhook refusal count unavailable: %s", type(error).__name__)
        return 0


def over_limit(address: str | None) -> bool:
    """Whether ``address`` used up its refusals of this window."""
    return refusals_so_far(address) >= settings.REPO_SEARCH_WEBHOOK_REFUSALS_PER_WINDOW


def count_refusal(address: str | None, code: str, target: str) -> int:
    """Count a refused call of ``address``; audit the count at 1, 10, 100 ... Returns it."""
    key = _key(address)
    window = settings.REPO_SEARCH_WEBHOOK_REFUSAL_WINDOW_SECS
    try:
        cache.add(key, 0, timeout=window)  # the window starts with the first refusal
        count = int(cache.incr(key))
    except Exception as error:
        logger.warning("webhook refusal not counted: %s", type(error).__name__)
        return 0
    if _is_power_of_ten(count):
        record(
            "webhook.refused",
            address=address,
            target=target,
            outcome=AuditOutcome.REFUSED,
            details={
                "count": count,
                "window_secs": window,
                "last": code,
                "note": "refused webhook calls from this address in this window so far",
            },
        )
    return count


def _is_power_of_ten(number: int) -> bool:
    while number >= 10 and number % 10 == 0:
        number //= 10
    return number == 1
