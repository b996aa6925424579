"""Redis locks: a holder that lives keeps its key past the TTL; one that dies frees it soon."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

import pytest
from django.conf import settings

from indexing.services import locks


@pytest.fixture
def short_ttl(settings: Any) -> int:
    settings.REPO_SEARCH_LOCK_TTL_SECS = 3
    settings.REPO_SEARCH_MAX_CONCURRENT_CLONES = 1
    locks.client().delete("reposearch:clone-slot:0", "reposearch:lock:repository:locks-test")
    return 3


def _clone_slots_in_use() -> int:
    slots = settings.REPO_SEARCH_MAX_CONCURRENT_CLONES
    return sum(1 for slot in range(slots) if locks.client().exists(f"reposearch:clone-slot:{slot}"))


def _take_slot_and_die(ready: Any) -> None:
    with locks.clone_slot(wait_seconds=5):
        ready.set()
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_clone_slot_outlives_its_ttl_while_held_and_frees_after(short_ttl: int) -> None:
    with locks.clone_slot(wait_seconds=1) as slot:
        time.sleep(short_ttl * 1.5)  # past the TTL: only the renewals keep it
        with (
            pytest.raises(locks.LockBusy, match="clone slots are busy"),
            locks.clone_slot(wait_seconds=0),
        ):
            pass
    assert slot == 0 and _clone_slots_in_use() == 0


def test_the_slot_of_a_fetch_killed_mid_way_frees_within_the_lock_ttl(short_ttl: int) -> None:
    # Before, a dead fetch's slot lived for the clone timeout + 2 minutes: the job's
    # redelivered fetch waited for it (minutes with one slot).
    ready = multiprocessing.get_context("fork").Event()
    child = multiprocessing.get_context("fork").Process(target=_take_slot_and_die, args=(ready,))
    child.start()
    child.join(timeout=30)
    assert ready.is_set() and child.exitcode == -signal.SIGKILL
    assert _clone_slots_in_use() == 1
    with locks.clone_slot(wait_seconds=short_ttl * 4) as slot:
        assert slot == 0


def test_a_repository_lock_is_kept_while_held_and_refused_to_a_second_run(short_ttl: int) -> None:
    with locks.repository_lock("locks-test", 1):
        time.sleep(short_ttl * 1.5)
        with (
            pytest.raises(locks.LockBusy, match="being indexed by another run"),
            locks.repository_lock("locks-test", 2),
        ):
            pass
    with locks.repository_lock("locks-test", 3):
        pass
