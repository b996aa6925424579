"""Sign-in attempts slowed down by growing delays, so passwords cannot be guessed quickly and
nobody can lock another person out.

Attempts are counted in three scopes, each with a number of free attempts:

- one user name from one address (``REPO_SEARCH_SIGN_IN_MAX_FAILURES``, 5);
- one address, whatever the user names (``REPO_SEARCH_SIGN_IN_MAX_ADDRESS_FAILURES``, 20);
- one user name from addresses it has never signed in from
  (``REPO_SEARCH_SIGN_IN_MAX_ACCOUNT_FAILURES``, 100): guessing from many addresses.

Past a scope's free attempts, each further attempt closes that scope for 2, 4, 8 ... seconds, at
most ``REPO_SEARCH_SIGN_IN_MAX_DELAY_SECS``; an attempt while it is closed is refused (the right
password too) without being counted, so waiting is the only way on. A stranger's guesses
therefore slow down the stranger's address and the addresses nobody has signed in from: never the
account's own address, where the user signs in as before. Counts are forgotten
``REPO_SEARCH_SIGN_IN_WINDOW_SECS`` after the last attempt; a successful sign-in clears its
(name, address) count, takes itself off the others and remembers the address as the account's for
30 days. When a scope first closes in a window, the audit log gets one ``sign_in.throttled`` row
(not one per attempt).

Counters live in Django's cache, shared by every web process when the cache is Redis; if the
cache is unreachable, sign-in carries on unthrottled (and says so in the log) rather than locking
everyone out. Used by the UI's sign-in page and the admin's login (``accounts.sign_in``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from accounts.audit import record
from accounts.models import AuditOutcome

logger = logging.getLogger(__name__)

DEFAULT_MAX_FAILURES = 5
DEFAULT_MAX_ADDRESS_FAILURES = 20
DEFAULT_MAX_ACCOUNT_FAILURES = 100
DEFAULT_WINDOW_SECS = 900
DEFAULT_MAX_DELAY_SECS = 900
KNOWN_ADDRESS_SECS = 30 * 24 * 3600

WHOM = {
    "pair": "this account from your address",
    "address": "your address",
    "account": "this account from a new address",
}


@dataclass(frozen=True)
class SignInRefused:
    """Why an attempt is refused before the password is even checked."""

    reason: str  # "pair", "address" or "account"
    retry_after: int  # seconds until the next attempt is let through

    @property
    def message(self) -> str:
        if self.retry_after < 120:
            wait = f"{self.retry_after} second{'s' if self.retry_after != 1 else ''}"
        else:
            wait = f"{math.ceil(self.retry_after / 60)} minutes"
        return (
            f"Too many failed sign-ins for {WHOM[self.reason]}. Try again in {wait}, or ask an"
            " administrator to reset the password."
        )


@dataclass(frozen=True)
class _Scope:
    reason: str
    key: str
    free: int


def _setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def _account(username: str) -> str:
    # User names are case-sensitive for Django, but guesses at "Admin" count against "admin".
    return hashlib.sha256(username.strip().casefold().encode("utf-8", "replace")).hexdigest()[:32]


def _known_key(username: str, address: str) -> str:
    return f"sign-in:known:{_account(username)}:{address}"


def _scopes(username: str, address: str | None) -> list[_Scope]:
    scopes = []
    if username and address:
        scopes.append(
            _Scope(
                "pair",
                f"sign-in:pair:{_account(username)}:{address}",
                _setting("REPO_SEARCH_SIGN_IN_MAX_FAILURES", DEFAULT_MAX_FAILURES),
            )
        )
    if address:
        scopes.append(
            _Scope(
                "address",
                f"sign-in:address:{address}",
                _setting("REPO_SEARCH_SIGN_IN_MAX_ADDRESS_FAILURES", DEFAULT_MAX_ADDRESS_FAILURES),
            )
        )
    if username and not (address and cache.get(_known_key(username, address))):
        scopes.append(
            _Scope(
                "account",
                f"sign-in:account:{_account(username)}",
                _setting("REPO_SEARCH_SIGN_IN_MAX_ACCOUNT_FAILURES", DEFAULT_MAX_ACCOUNT_FAILURES),
            )
        )
    return scopes


def delay_after(attempts: int, free: int) -> int:
    """Seconds a scope stays closed after its ``attempts``-th attempt (0 while free)."""
    if attempts <= free:
        return 0
    longest = _setting("REPO_SEARCH_SIGN_IN_MAX_DELAY_SECS", DEFAULT_MAX_DELAY_SECS)
    return int(min(longest, 2 ** min(attempts - free, 30)))


def _closed_for(scope: _Scope, now: float) -> int:
    until = cache.get(f"{scope.key}:gate")
    return max(1, math.ceil(float(until) - now)) if until is not None and until > now else 0


def _count(scope: _Scope, now: float, username: str, address: str | None) -> SignInRefused | None:
    """Counts an attempt in ``scope``; past its free ones, closes the scope for the delay. Two
    attempts at once past the free ones: one closes the gate, the other is refused by it."""
    lifetime = _setting("REPO_SEARCH_SIGN_IN_WINDOW_SECS", DEFAULT_WINDOW_SECS) + _setting(
        "REPO_SEARCH_SIGN_IN_MAX_DELAY_SECS", DEFAULT_MAX_DELAY_SECS
    )
    cache.add(scope.key, 0, timeout=lifetime)
    try:
        attempts = int(cache.incr(scope.key))  # atomic in Redis: parallel guesses each count
    except ValueError:  # expired between the two calls
        cache.set(scope.key, 1, timeout=lifetime)
        attempts = 1
    cache.touch(scope.key, lifetime)  # forgotten a window after the last attempt
    delay = delay_after(attempts, scope.free)
    if not delay:
        return None
    if not cache.add(f"{scope.key}:gate", now + delay, timeout=delay):
        cache.decr(scope.key)
        return SignInRefused(scope.reason, _closed_for(scope, now) or 1)
    if attempts == scope.free + 1:
        _audit_throttled(scope, attempts, delay, username, address)
    return None


def _audit_throttled(
    scope: _Scope, attempts: int, delay: int, username: str, address: str | None
) -> None:
    record(
        "sign_in.throttled",
        address=address,
        target=username if scope.reason != "address" else "",
        outcome=AuditOutcome.REFUSED,
        details={
            "scope": scope.reason,
            "attempts": attempts,
            "delay_secs": delay,
            "note": "sign-in attempts past the free ones now wait; later ones are not logged",
        },
    )


def attempt(username: str, address: str | None) -> SignInRefused | None:
    """Counts an attempt for ``username`` from ``address`` before its password is checked, or
    says why it is refused (``None``: go ahead). Counting first means simultaneous guesses
    cannot all slip in before the first failure is recorded."""
    now = time.time()
    try:
        scopes = _scopes(username, address)
        closed = [(_closed_for(scope, now), scope) for scope in scopes]
        waits = [(wait, scope) for wait, scope in closed if wait]
        if waits:
            wait, scope = max(waits, key=lambda pair: pair[0])
            return SignInRefused(scope.reason, wait)
        refusals = [
            refused for scope in scopes if (refused := _count(scope, now, username, address))
        ]
    except Exception:
        logger.warning("sign-in throttle: the cache is unreachable; not counting", exc_info=True)
        return None
    return max(refusals, key=lambda refused: refused.retry_after) if refusals else None


def succeeded(username: str, address: str | None) -> None:
    """Forgets the (name, address) count, takes the successful attempt off the address's and the
    account's (an office behind one address signs in many times a day), and remembers the
    address as one this account signs in from."""
    try:
        for scope in _scopes(username, address):
            if scope.reason == "pair":
                cache.delete_many([scope.key, f"{scope.key}:gate"])
            else:
                with contextlib.suppress(ValueError):  # its window ended meanwhile
                    cache.decr(scope.key)
        if username and address:
            cache.set(_known_key(username, address), 1, timeout=KNOWN_ADDRESS_SECS)
    except Exception:
        logger.warning("sign-in throttle: the cache is unreachable; not cleared", exc_info=True)
