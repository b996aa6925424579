"""Fair use of costly searches: each caller runs at most a few of them at once.

A search is *costly* when the trigram index cannot narrow it -- a regex (or an expression of
terms) with no literal of three characters every match must contain, so every chunk in scope
is read -- or when it counts exact totals over more than ``QUICK_COUNT_FILES`` files. Each
caller (an account; an address when anonymous) holds at most
``REPO_SEARCH_COSTLY_SEARCHES_PER_USER`` of them at once, across every web process: the slots
are redis-py ``Lock`` objects (``<caller>:<slot>``), each with an expiry so a process that dies
mid-search frees its slot. A costly search that finds every slot of its caller taken is refused
at once (``SearchBusy``: 429 with ``Retry-After``) rather than queued, because a queued request
would hold one of the web server's threads while it waits -- the very thing that slowed
everyone else's searches. Cheap searches are never held up, and other callers' costly searches
have slots of their own.

Callers with no key (the ``manage.py search`` command, the benchmarks) are not limited. If Redis
cannot be reached the search runs: a guard against one caller's flood is no reason for an
outage (as ``accounts.throttles``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, ClassVar

import redis
from django.conf import settings
from redis.lock import Lock

from reposearch.domain_errors import DomainError
from search.exact.engine import QUICK_COUNT_FILES, ExactRequest
from search.exact.patterns import MIN_NARROWING_CHARS

logger = logging.getLogger(__name__)

KEY_PREFIX = "reposearch:costly-search"
# A slot frees itself this long after its search started if nothing released it (a killed
# process): longer than any search's budget (``search.exact.engine``: seconds).
SLOT_EXPIRY_SECS = 120
RETRY_AFTER_SECS = 2


class SearchBusy(DomainError):
    """Every costly-search slot of the caller is taken."""

    http_status: ClassVar[int] = 429
    code = "too_many_costly_searches"

    def __init__(self, running: int) -> None:
        self.running = running
        self.retry_after = RETRY_AFTER_SECS
        self.message = (
            f"{running} costly search{'es' if running != 1 else ''} of yours"
            f" {'are' if running != 1 else 'is'} running (a regex with no literal text to narrow"
            " by, or exact totals over many files); try again when one has finished, or add"
            ' literal text ("..." or a word of 3+ characters in the regex) or filters'
            " (repo:, lang:, file:)"
        )
        self.details = {"running": running, "retry_after": RETRY_AFTER_SECS}
        super().__init__(self.message)


def is_costly(request: ExactRequest) -> bool:
    """Whether an exact or regex search reads every chunk in scope or counts many files."""
    narrows = any(
        len(literal) >= MIN_NARROWING_CHARS
        for condition in request.conditions
        for literal in condition.literals
    )
    return not narrows or request.count_max_files > QUICK_COUNT_FILES


def caller_of(user: Any, address: str | None) -> str:
    """The key a request's costly searches are counted under: its account, else its address
    (``REMOTE_ADDR``, which names the client once a trusted proxy's header is applied)."""
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.pk}"
    return f"address:{address or 'unknown'}"


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)


def _slots(caller: str) -> list[Lock]:
    client = _client(settings.REDIS_URL)
    return [
        # thread_local=False: each Lock object is used by the one request that made it.
        Lock(client, f"{KEY_PREFIX}:{caller}:{slot}", timeout=SLOT_EXPIRY_SECS, thread_local=False)
        for slot in range(settings.REPO_SEARCH_COSTLY_SEARCHES_PER_USER)
    ]


@contextmanager
def costly_search_slot(caller: str | None, request: ExactRequest) -> Iterator[None]:
    """Hold one of ``caller``'s slots while the block runs ``request`` (nothing when it is
    cheap or the caller unnamed); ``SearchBusy`` when every slot is taken."""
    if caller is None or not is_costly(request):
        yield
        return
    held: Lock | None = None
    try:
        slots = _slots(caller)
        held = next((slot for slot in slots if slot.acquire(blocking=False)), None)
    except redis.RedisError as error:
        logger.warning("costly-search slots skipped: %s", type(error).__name__)
        yield
        return
    if held is None:
        raise SearchBusy(len(slots))
    try:
        yield
    finally:
        try:
            held.release()
        except redis.RedisError as error:  # the slot expired (a LockError) or Redis is away
            logger.warning("costly-search slot not released: %s", type(error).__name__)
