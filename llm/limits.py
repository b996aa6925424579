"""How many chat-model calls one process sends at once (``LLM_MAX_CONCURRENT_CALLS``).

A burst of asks must not pile up on a slow model server. Every chat call (a plain call, a
stream, sync in a thread or async on the event loop) takes a slot for as long as it runs. A call
that finds every slot taken queues: it waits up to ``LLM_QUEUE_WAIT_SECS`` (never longer than
its own deadline) for one to free, then fails with ``ModelBusy`` -- a ``ModelUnavailable``, so
expansion, rerank and HyDE skip and say why, and ask answers 503 ``model_busy``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from llm.errors import ModelBusy

_POLL_SECS = 0.02  # how often a waiting async call looks for a free slot


def max_calls() -> int:
    from django.conf import settings

    return max(1, int(getattr(settings, "LLM_MAX_CONCURRENT_CALLS", 4)))


def queue_wait_secs() -> float:
    from django.conf import settings

    return max(0.0, float(getattr(settings, "LLM_QUEUE_WAIT_SECS", 10.0)))


class CallLimiter:
    """A counting semaphore whose size is read from the settings at each acquire."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.running = 0
        self.waiting = 0

    def try_acquire(self) -> bool:
        with self._cond:
            if self.running < max_calls():
                self.running += 1
                return True
            return False

    def acquire(self, wait_s: float) -> bool:
        deadline = time.monotonic() + wait_s
        with self._cond:
            self.waiting += 1
            try:
                while self.running >= max_calls():
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._cond.wait(remaining)
                self.running += 1
                return True
            finally:
                self.waiting -= 1

    async def aacquire(self, wait_s: float) -> bool:
        deadline = time.monotonic() + wait_s
        with self._cond:
            self.waiting += 1
        try:
            while not self.try_acquire():
                if time.monotonic() >= deadline:
                    return False
                await asyncio.sleep(_POLL_SECS)
            return True
        finally:
            with self._cond:
                self.waiting -= 1

    def release(self) -> None:
        with self._cond:
            self.running = max(0, self.running - 1)
            self._cond.notify()


limiter = CallLimiter()


def _busy(waited: float) -> ModelBusy:
    return ModelBusy(
        f"busy: {max_calls()} chat call(s) already running in this process "
        f"(LLM_MAX_CONCURRENT_CALLS) and none finished within {waited:.3g}s"
    )


@contextmanager
def call_slot(timeout: float) -> Iterator[float]:
    """Hold a slot while the block runs; wait at most ``min(queue wait, timeout)`` for it.
    Yields ``timeout`` less the time spent queueing (what is left for the call)."""
    if limiter.try_acquire():
        left = timeout
    else:
        started = time.monotonic()
        wait_s = min(queue_wait_secs(), max(0.0, timeout))
        if not limiter.acquire(wait_s):
            raise _busy(wait_s)
        left = max(0.05, timeout - (time.monotonic() - started))
    try:
        yield left
    finally:
        limiter.release()


@asynccontextmanager
async def async_call_slot(timeout: float) -> AsyncIterator[float]:
    if limiter.try_acquire():
        left = timeout
    else:
        started = time.monotonic()
        wait_s = min(queue_wait_secs(), max(0.0, timeout))
        if not await limiter.aacquire(wait_s):
            raise _busy(wait_s)
        left = max(0.05, timeout - (time.monotonic() - started))
    try:
        yield left
    finally:
        limiter.release()
