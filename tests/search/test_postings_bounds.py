"""The postings' bookkeeping (``search.retrieval.postings_bounds``) against a plain reference:
what the records read over several rounds add up to per chunk."""

from __future__ import annotations

import numpy as np

from search.retrieval.postings_bounds import Lists


def _rounds(rng: np.random.Generator, terms: int, sources: int) -> list[tuple[np.ndarray, ...]]:
    """Rounds of records, each (chunk, list) pair once over all rounds, as the lists give them."""
    chunks = rng.choice(50_000, size=4_000, replace=False).astype(np.int64)
    source_of = {int(c): int(rng.integers(sources)) for c in chunks}
    pairs = [(int(c), j) for c in chunks for j in range(terms) if rng.random() < 0.5]
    rng.shuffle(pairs)
    rounds = []
    for part in np.array_split(np.arange(len(pairs)), 5):
        ids = np.asarray([pairs[i][0] for i in part], dtype=np.int64)
        term = np.asarray([pairs[i][1] for i in part], dtype=np.int64)
        rounds.append((
            ids, rng.random(len(ids)), 1 << term,
            np.asarray([source_of[int(i)] for i in ids], dtype=np.int64), ids % 4,
        ))  # fmt: skip
    return rounds


def test_merging_rounds_gives_each_chunks_sums_and_keeps_the_dead_dead() -> None:
    rng = np.random.default_rng(7)
    lists = Lists([], [])
    known: dict[int, float] = {}
    mask: dict[int, int] = {}
    dead: set[int] = set()
    for number, (ids, values, bits, source, flags) in enumerate(_rounds(rng, 3, 6)):
        lists.add(ids, values, bits, source, flags)
        for i, value, bit in zip(ids.tolist(), values.tolist(), bits.tolist(), strict=True):
            known[i] = known.get(i, 0.0) + value
            mask[i] = mask.get(i, 0) | bit
        if number == 1:  # some chunks are ruled out between rounds
            killed = lists.ids[::5]
            lists.kill(killed)
            dead.update(killed.tolist())
    expected = sorted(known)
    assert lists.ids.tolist() == expected
    assert np.allclose(lists.known, [known[i] for i in expected])
    assert lists.mask.tolist() == [mask[i] for i in expected]
    assert lists.flags.tolist() == [i % 4 for i in expected]
    assert lists.alive.tolist() == [i not in dead for i in expected]
