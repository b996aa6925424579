"""Which database a search reads from: a streaming replica that has replayed what it needs, or
the primary.

Replicas are the ``replica1``, ``replica2``... entries of ``DATABASES``
(``REPO_SEARCH_READ_REPLICAS``). The scope statement runs on the primary (who may see what is
never read from a copy that may be behind) and reads, per repository, the WAL position recorded
once its last generation swap committed (``indexing.models.SwapPosition``; the primary's
current position where none is recorded yet), and the primary's position now. A search of those
repositories may then read from a replica whose replay position is at or past the highest of
them: that replica holds the live generations the scope names, their statistics and their
chunks. Vectors written after a swap may still be on their way; the answer says how far behind
its database was (``ReadRoute.served_by``).

The replicas take turns; one that is behind is skipped for this search (and asked again by the
next), one that does not answer is left alone for ``DOWN_SECS``. When a replica fails in the
middle of a search, the search runs again on the next database, the primary last
(``SearchExecutor.run``). Inside the caller's transaction every search reads the primary: only
its connection sees what the transaction wrote.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from search.retrieval.db import reading_from

logger = logging.getLogger(__name__)

DOWN_SECS = 5.0
PRIMARY = "primary"

_LOCK = threading.Lock()
_DOWN_UNTIL: dict[str, float] = {}
_TURNS = itertools.count()
T = TypeVar("T")


class NeedsPosition(Protocol):
    """A repository in scope (``search.retrieval.scope.ScopeRepository``)."""

    replay_needed: int  # the WAL position a replica must have replayed to serve it
    primary_lsn: int  # the primary's position when the scope was read


@dataclass
class ReadRoute:
    """One database to read a search from, and why the ones before it were passed over."""

    alias: str  # a DATABASES alias: ``default`` is the primary
    replayed: int | None = None  # the replica's replay position when chosen
    primary_lsn: int = 0
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def replica(self) -> bool:
        return self.alias != DEFAULT_DB_ALIAS

    def served_by(self) -> dict[str, Any]:
        """What the answer says about where it was read: the database, how many bytes of the
        primary's WAL it had not replayed when the search began (0 for the primary), and why
        any replica was passed over."""
        lag = 0
        if self.replayed is not None:
            lag = max(0, self.primary_lsn - self.replayed)
        return {
            "database": self.alias if self.replica else PRIMARY,
            "lag_bytes": lag,
            "skipped": dict(self.skipped),
        }


def replica_aliases() -> list[str]:
    return [alias for alias in settings.DATABASES if alias.startswith("replica")]


@dataclass
class Position:
    """A repository's need (``NeedsPosition``) read outside the hybrid scope."""

    replay_needed: int
    primary_lsn: int


def positions(repo_ids: Sequence[Any]) -> list[Position]:
    """What a replica must have replayed to serve a search of ``repo_ids`` (exact, regex,
    symbol and file-name searches; the hybrid scope reads the same with its repositories),
    read on the primary. Nothing is read when no replica is configured."""
    if not replica_aliases() or not repo_ids:
        return []
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(
            "SELECT p.lsn, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint"
            " FROM indexing_repository r"
            " LEFT JOIN indexing_swapposition p ON p.repository_id = r.id"
            " WHERE r.id = ANY(%s)",
            [list(repo_ids)],
        )
        rows = cursor.fetchall()
    return [Position(now if lsn is None else lsn, now) for lsn, now in rows]


def mark_down(alias: str, why: str) -> None:
    """Leave ``alias`` alone for ``DOWN_SECS``: it did not answer."""
    with _LOCK:
        _DOWN_UNTIL[alias] = time.monotonic() + DOWN_SECS
    logger.warning("read replica %s left alone for %.0f s: %s", alias, DOWN_SECS, why)
    connections[alias].close()


def _down(alias: str) -> bool:
    with _LOCK:
        return _DOWN_UNTIL.get(alias, 0.0) > time.monotonic()


def _replay_position(alias: str) -> int | None:
    """The replica's replay position, or None when it is no longer a replica (promoted)."""
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint"
        )
        recovering, replayed = cursor.fetchone()
    return int(replayed) if recovering and replayed is not None else None


def read_routes(
    repositories: Sequence[NeedsPosition], *, in_transaction: bool
) -> Iterator[ReadRoute]:
    """The databases to try for a search of ``repositories``, in order: each replica that has
    replayed what they need (the replicas take turns being first), then the primary. Asked
    for the next one only when the one before failed."""
    skipped: dict[str, str] = {}
    aliases = replica_aliases()
    if in_transaction and aliases:
        aliases = []
        skipped["replicas"] = "the caller's transaction is open"
    primary_lsn = max((r.primary_lsn for r in repositories), default=0)
    needed = max((r.replay_needed for r in repositories), default=0)
    if aliases:
        start = next(_TURNS) % len(aliases)
        aliases = aliases[start:] + aliases[:start]
    for alias in aliases:
        if _down(alias):
            skipped[alias] = "did not answer a moment ago"
            continue
        try:
            replayed = _replay_position(alias)
        except DatabaseError as error:
            mark_down(alias, str(error).strip())
            skipped[alias] = "does not answer"
            continue
        if replayed is None:
            skipped[alias] = "not a replica (promoted?)"
            continue
        if replayed < needed:
            skipped[alias] = f"behind: {needed - replayed} bytes of WAL to replay"
            continue
        route = ReadRoute(alias, replayed, primary_lsn, dict(skipped))
        yield route
        skipped[alias] = "failed during the search"
    yield ReadRoute(DEFAULT_DB_ALIAS, None, primary_lsn, skipped)


def replica_health() -> dict[str, dict[str, Any]]:
    """Each replica (``GET /api/health``): whether it answers as a replica, and how many bytes
    of the primary's WAL it has still to replay. Not required: searches read the primary
    without them."""
    found: dict[str, dict[str, Any]] = {}
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
        primary = int(cursor.fetchone()[0])
    for alias in replica_aliases():
        try:
            replayed = _replay_position(alias)
        except DatabaseError as error:
            connections[alias].close()
            found[alias] = {"ok": False, "error": f"does not answer: {type(error).__name__}"}
            continue
        if replayed is None:
            found[alias] = {"ok": False, "error": "not a replica (promoted?)"}
            continue
        found[alias] = {"ok": True, "lag_bytes": max(0, primary - replayed), "down": _down(alias)}
    return found


def still_answers(alias: str) -> bool:
    """Whether ``alias`` takes a new connection and a statement (after a stage failed on it)."""
    connections[alias].close()
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        mark_down(alias, str(error).strip())
        return False
    return True


def read_with_fallback(
    repositories: Sequence[NeedsPosition], run: Callable[[], T], failed: Callable[[T], bool]
) -> tuple[T, ReadRoute]:
    """``run()`` reading from the first database of ``read_routes``; again on the next one
    when a replica raises a database error or ``failed(answer)`` (a stage lost its replica:
    ``lost_database``). The primary's errors are the caller's."""
    in_transaction = connections[DEFAULT_DB_ALIAS].in_atomic_block
    for route in read_routes(repositories, in_transaction=in_transaction):
        try:
            with reading_from(route.alias):
                answer = run()
        except DatabaseError as error:
            if not route.replica:
                raise
            mark_down(route.alias, str(error).strip())
            continue
        if route.replica and failed(answer):
            still_answers(route.alias)  # if not, left alone for a while
            continue
        return answer, route
    raise AssertionError("read_routes ends with the primary")  # pragma: no cover


def lost_database(stages: Sequence[Any]) -> bool:
    """Whether a stage of a search's trace failed because its database connection did (the
    server went away, or a replica cancelled a statement in conflict with recovery), not
    because a statement ran out of its time."""
    return any(
        stage.status == "failed"
        and stage.reason.startswith(("OperationalError", "InterfaceError"))
        and "statement timeout" not in stage.reason
        for stage in stages
    )
