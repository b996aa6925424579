"""Locks in Redis that hold across every worker and machine.

- ``repository_lock``: one run per repository at a time (clone/fetch/index never interleave,
  and a task delivered twice never runs twice at once).
- ``clone_slot``: at most ``REPO_SEARCH_MAX_CONCURRENT_CLONES`` fetches at once, anywhere — a
  semaphore made of N keys, each taken with ``SET NX`` and a TTL so a dead worker's slot frees
  itself.

Both are redis-py's ``Lock`` (token-checked release and extension), held with a short TTL that
a thread renews while the holder runs.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from functools import lru_cache

import redis
from django.conf import settings
from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

logger = logging.getLogger(__name__)


class LockBusy(Exception):
    """The lock or every slot is held by someone else."""


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


def client() -> redis.Redis:
    return _client(settings.REDIS_URL)


@contextlib.contextmanager
def repository_lock(
    repository_id: object,
    job_id: int | str,
    ttl_seconds: int | None = None,
    wait_seconds: float = 0.0,
) -> Iterator[None]:
    """Hold the repository's lock for the block; raise ``LockBusy`` if another run holds it.

    The lock belongs to one run of a stage, not to the job: a second delivery of the same task
    (the broker's visibility timeout passed while it ran) finds it held and waits instead of
    running the stage beside the first. A short TTL, renewed by a background thread while the
    block runs, frees the lock of a run whose worker vanished (within ``ttl_seconds``, default
    ``REPO_SEARCH_LOCK_TTL_SECS``), and the job's resumed or redelivered task takes it then.
    """
    ttl_seconds = ttl_seconds or settings.REPO_SEARCH_LOCK_TTL_SECS
    lock = _lock(_repository_key(repository_id), ttl_seconds)
    token = f"job:{job_id}:{uuid.uuid4().hex}"
    if not lock.acquire(blocking=True, blocking_timeout=wait_seconds, token=token):
        raise LockBusy(f"repository {repository_id} is being indexed by another run")
    with _renewed(lock, ttl_seconds, "repository lock"):
        yield


def _lock(key: str, ttl_seconds: int) -> Lock:
    # not thread-local: the thread that renews it holds the same token as the one that took it
    return client().lock(key, timeout=ttl_seconds, sleep=0.2, thread_local=False)


@contextlib.contextmanager
def _renewed(lock: Lock, ttl_seconds: int, what: str) -> Iterator[None]:
    """Keep ``lock`` (held) alive for the block, renewing it every third of its TTL, and
    release it after: a holder that dies stops renewing, so it frees within the TTL."""
    stop = threading.Event()

    def keep_alive() -> None:
        while not stop.wait(ttl_seconds / 3):
            with contextlib.suppress(redis.RedisError):  # (LockError too: lost, or Redis away)
                lock.extend(ttl_seconds, replace_ttl=True)

    keeper = threading.Thread(target=keep_alive, name=f"{what}-keeper", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        stop.set()
        keeper.join(timeout=5)
        # With Redis gone the key cannot be released now, and need not be: its TTL ends it. The
        # stage's work is done; failing the task now would only make it run again. A thread
        # tries again meanwhile, so a Redis that kept the key (its append-only file) does not
        # make the job's next stage wait out the TTL.
        try:
            _release(lock)
        except redis.RedisError as error:
            logger.warning("%s %s left to expire: %s", what, lock.name, error)
            threading.Thread(
                target=_release_when_back, args=(lock, ttl_seconds),
                name=f"{what}-release", daemon=True,
            ).start()  # fmt: skip


def _release(lock: Lock) -> None:
    """Release ``lock`` if it is still ours; one broken or expired meanwhile is left alone."""
    with contextlib.suppress(LockNotOwnedError):
        lock.release()


def _release_when_back(lock: Lock, ttl_seconds: int) -> None:
    deadline = time.monotonic() + ttl_seconds
    while time.monotonic() < deadline:
        time.sleep(2)
        with contextlib.suppress(redis.RedisError):
            _release(lock)
            return


def _repository_key(repository_id: object) -> str:
    return f"reposearch:lock:repository:{repository_id}"


def repository_lock_holder(repository_id: object) -> str | None:
    """The token of the repository lock's holder (``job:<job id>:<uuid>``), if anyone holds it
    and Redis answers."""
    try:
        value = client().get(_repository_key(repository_id))
    except redis.RedisError:
        return None
    return value.decode() if isinstance(value, bytes) else None


def break_repository_lock(repository_id: object) -> bool:
    """Free the repository's lock at once: its holder's task is nowhere (the census found no
    live worker holding it), so the job's resumed task need not wait for the TTL. A holder cut
    off from Redis cannot renew it afterwards (its token no longer matches)."""
    try:
        return bool(client().delete(_repository_key(repository_id)))
    except redis.RedisError:
        return False  # it expires with its TTL instead


@contextlib.contextmanager
def clone_slot(wait_seconds: float, ttl_seconds: int | None = None) -> Iterator[int]:
    """Take one of the shared clone slots, waiting up to ``wait_seconds``; yield its number.

    Held as the repository lock is (a short TTL its holder renews), so the slot of a worker
    that vanished mid-fetch frees within ``REPO_SEARCH_LOCK_TTL_SECS``, not after the clone
    timeout: the job's redelivered fetch would otherwise wait for the dead one's slot."""
    ttl_seconds = ttl_seconds or settings.REPO_SEARCH_LOCK_TTL_SECS
    slots = settings.REPO_SEARCH_MAX_CONCURRENT_CLONES
    deadline = time.monotonic() + wait_seconds
    while True:
        for slot in range(slots):
            lock = _lock(f"reposearch:clone-slot:{slot}", ttl_seconds)
            if lock.acquire(blocking=False):
                with _renewed(lock, ttl_seconds, "clone slot"):
                    yield slot
                return
        if time.monotonic() >= deadline:
            raise LockBusy(f"all {slots} clone slots are busy")
        time.sleep(0.5)
