"""The compiled loops of ``postings_memory`` (numba, ``nogil``: searches in other threads run
beside them): one list's records added into a repository's buffer, and that repository's chunks
offered to the heaps of the best ``limit`` per list of the pass."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def accumulate(
    scores: np.ndarray, masks: np.ndarray, kinds: np.ndarray, touched: np.ndarray, count: int,
    offsets: np.ndarray, words: np.ndarray, coefficient: float, norm: np.ndarray, bit: int,
    admitted: np.ndarray,
) -> int:  # fmt: skip
    """Add one list's contributions (``tf / (tf + norm[len])`` times ``coefficient``, with
    ``norm`` BM25's length normalisation by token count) to its chunks' scores, and the slots
    seen for the first time to ``touched`` (``count`` of them so far); the new count."""
    for i in range(offsets.shape[0]):
        word = np.int64(words[i])
        kind = (word >> 14) & 3
        if not admitted[kind]:
            continue
        slot = np.int64(offsets[i])
        tf = np.float64(word & 0x3FFF) / 2.0
        scores[slot] += coefficient * (tf / (tf + norm[word >> 16]))
        mask = masks[slot]
        touched[count] = slot
        count += mask == 0  # (no branch: kept only when new)
        masks[slot] = mask | bit
        kinds[slot] = kind
    return count


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _worse(score: float, chunk: int, other_score: float, other_chunk: int) -> bool:
    return score < other_score or (score == other_score and chunk > other_chunk)


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def offer(
    scores: np.ndarray, masks: np.ndarray, kinds: np.ndarray, touched: np.ndarray, count: int,
    base: int, ids: np.ndarray, dead: np.ndarray, informative: int, boost: float,
    excluded: np.ndarray,
    wanted: np.ndarray, limits: np.ndarray, heap_score: np.ndarray, heap_id: np.ndarray,
    sizes: np.ndarray,
) -> None:  # fmt: skip
    """Offer one repository's chunks that some list read (``touched[:count]``: slots, chunk id
    ``ids[slot]`` when its lists were packed, else ``base + slot``) to each list's heap (its root the worst kept: score asc, then id desc),
    and clear their slots in the buffer."""
    worst = np.zeros(4, dtype=np.float64)
    _worst_kept(heap_score, sizes, limits, excluded, wanted, worst)
    for i in range(count):
        slot = touched[i]
        score, mask, kind = scores[slot], masks[slot], kinds[slot]
        scores[slot] = 0.0
        masks[slot] = 0
        # (mostly no heap would keep it: below the worst kept of every list admitting its kind)
        if score * boost < worst[kind]:
            continue
        if informative and (mask & informative) == informative:
            score = score * boost
        chunk = ids[slot] if ids.shape[0] else base + slot
        if dead.shape[0]:
            at = np.searchsorted(dead, chunk)
            if at < dead.shape[0] and dead[at] == chunk:
                continue
        for w in range(limits.shape[0]):
            if kind & excluded[w] or (wanted[w] and not kind & wanted[w]):
                continue
            if sizes[w] == limits[w] and not (
                score > heap_score[w, 0] or (score == heap_score[w, 0] and chunk < heap_id[w, 0])
            ):
                continue
            _push(heap_score[w], heap_id[w], sizes, w, limits[w], score, chunk)
            _worst_kept(heap_score, sizes, limits, excluded, wanted, worst)


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _worst_kept(
    heap_score: np.ndarray, sizes: np.ndarray, limits: np.ndarray, excluded: np.ndarray,
    wanted: np.ndarray, worst: np.ndarray,
) -> None:  # fmt: skip
    """Per kind of chunk, the lowest score a list admitting it could still take (0 while one of
    them is not full; infinite when none admits it)."""
    for kind in range(4):
        low = np.inf
        for w in range(limits.shape[0]):
            if kind & excluded[w] or (wanted[w] and not kind & wanted[w]) or limits[w] == 0:
                continue
            low = min(low, heap_score[w, 0] if sizes[w] == limits[w] else 0.0)
        worst[kind] = low


@njit(nogil=True, cache=True)  # type: ignore[untyped-decorator]
def _push(
    heap_score: np.ndarray, heap_id: np.ndarray, sizes: np.ndarray, w: int, limit: int,
    score: float, chunk: int,
) -> None:  # fmt: skip
    size = sizes[w]
    if size < limit:
        at = size
        sizes[w] = size + 1
        while at > 0:  # up while worse than the parent
            parent = (at - 1) // 2
            if not _worse(score, chunk, heap_score[parent], heap_id[parent]):
                break
            heap_score[at], heap_id[at] = heap_score[parent], heap_id[parent]
            at = parent
    elif _worse(heap_score[0], heap_id[0], score, chunk):
        at = 0
        while True:  # down while a child is worse
            child = 2 * at + 1
            if child >= size:
                break
            if child + 1 < size and _worse(
                heap_score[child + 1], heap_id[child + 1], heap_score[child], heap_id[child]
            ):
                child += 1
            if not _worse(heap_score[child], heap_id[child], score, chunk):
                break
            heap_score[at], heap_id[at] = heap_score[child], heap_id[child]
            at = child
    else:
        return
    heap_score[at], heap_id[at] = score, chunk
