"""Failed sign-ins counted per account and per address, so passwords cannot be guessed quickly.

After ``REPO_SEARCH_SIGN_IN_MAX_FAILURES`` failed attempts for one user name, or
``REPO_SEARCH_SIGN_IN_MAX_ADDRESS_FAILURES`` from one address, within
``REPO_SEARCH_SIGN_IN_WINDOW_SECS`` of the first of them, every further attempt is refused
(the right password too) until that window ends. Counters live in Django's cache, shared by
every web process when the cache is Redis; if the cache is unreachable, sign-in carries on
unthrottled (and says so in the log) rather than locking everyone out. A successful sign-in
clears its account's counter, not its address's: one address guessing many accounts stays
throttled.

Used by the UI's sign-in page and the admin's login (``accounts.sign_in``).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

DEFAULT_MAX_FAILURES = 5
DEFAULT_MAX_ADDRESS_FAILURES = 20
DEFAULT_WINDOW_SECS = 900


@dataclass(frozen=True)
class SignInRefused:
    """Why an attempt is refused before the password is even checked."""

    reason: str  # "account" or "address"
    retry_after: int  # seconds until the window ends

    @property
    def message(self) -> str:
        minutes = max(1, math.ceil(self.retry_after / 60))
        whom = "this account" if self.reason == "account" else "your address"
        return (
            f"Too many failed sign-ins for {whom}. Try again in {minutes} minute"
            f"{'s' if minutes != 1 else ''}, or ask an administrator to reset the password."
        )


def _limits() -> tuple[int, int, int]:
    return (
        int(getattr(settings, "REPO_SEARCH_SIGN_IN_MAX_FAILURES", DEFAULT_MAX_FAILURES)),
        int(
            getattr(
                settings, "REPO_SEARCH_SIGN_IN_MAX_ADDRESS_FAILURES", DEFAULT_MAX_ADDRESS_FAILURES
            )
        ),
        int(getattr(settings, "REPO_SEARCH_SIGN_IN_WINDOW_SECS", DEFAULT_WINDOW_SECS)),
    )


def _account_key(username: str) -> str:
    # User names are case-sensitive for Django, but guesses at "Admin" count against "admin".
    digest = hashlib.sha256(username.strip().casefold().encode("utf-8", "replace")).hexdigest()
    return f"sign-in-failures:account:{digest[:32]}"


def _address_key(address: str) -> str:
    return f"sign-in-failures:address:{address}"


def _keys(username: str, address: str | None) -> list[tuple[str, str]]:
    keys = [("account", _account_key(username))] if username else []
    if address:
        keys.append(("address", _address_key(address)))
    return keys


def _count(key: str, window_secs: int, now: float) -> tuple[int, float]:
    """Adds one attempt to ``key``'s window (opened by the first attempt); (attempts, its end)."""
    cache.add(f"{key}:until", now + window_secs, timeout=window_secs)
    cache.add(key, 0, timeout=window_secs)
    try:
        attempts = cache.incr(key)  # atomic in Redis: parallel guesses each count
    except ValueError:  # the window ended between the two calls
        cache.set(key, 1, timeout=window_secs)
        attempts = 1
    until = cache.get(f"{key}:until") or now + window_secs
    return attempts, float(until)


def attempt(username: str, address: str | None) -> SignInRefused | None:
    """Counts an attempt for ``username`` from ``address`` before its password is checked, and
    says why it is refused, or ``None``. Counting first means simultaneous guesses cannot all
    slip in before the first failure is recorded."""
    max_account, max_address, window_secs = _limits()
    now = time.time()
    refused: SignInRefused | None = None
    for reason, key in _keys(username, address):
        try:
            attempts, until = _count(key, window_secs, now)
        except Exception:
            logger.warning(
                "sign-in throttle: the cache is unreachable; not counting", exc_info=True
            )
            return None
        limit = max_account if reason == "account" else max_address
        if attempts > limit and refused is None:
            refused = SignInRefused(reason, max(1, math.ceil(until - now)))
    return refused


def succeeded(username: str, address: str | None) -> None:
    """Forgets the account's attempts and takes the successful one off the address's count
    (an office behind one address signs in many times a day)."""
    try:
        if username:
            key = _account_key(username)
            cache.delete_many([key, f"{key}:until"])  # the next failure opens a new window
        if address:
            cache.decr(_address_key(address))
    except ValueError:  # the address's window ended meanwhile
        pass
    except Exception:
        logger.warning("sign-in throttle: the cache is unreachable; not cleared", exc_info=True)
