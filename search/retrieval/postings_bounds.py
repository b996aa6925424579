"""The bounds of the postings' top-k (``search.retrieval.postings``): what the records read so far
add up to per chunk, each chunk's lower and upper bound, and whether they settle the top.

One pass may rank several lists at once (``Want``: the scope's chunks, and the tests and docs it
left out by default): they share the records read and the chunks read by id, and each list is
decided over the chunks its flags admit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

import numpy as np

from search.retrieval.postings_check import ExactScores

CHECK_BATCH = 1000  # chunks read by id per statement, the most promising first


@dataclass(frozen=True)
class Want:
    """One ranked list of a pass: the chunks whose test/doc flags it admits, and how many."""

    limit: int
    excluded_flags: int = 0  # chunks with any of these flags are out of this list
    wanted_flags: int = 0  # when set, only chunks with one of these flags are in it

    def admits(self, flags: np.ndarray) -> np.ndarray:
        keep = (flags & self.excluded_flags) == 0
        if self.wanted_flags:
            keep &= (flags & self.wanted_flags) != 0
        return keep

    def admitted(self, exact: ExactScores) -> tuple[np.ndarray, np.ndarray]:
        """Ids and exact scores of the chunks read by id that this list admits."""
        count = len(exact.scores)
        ids = np.fromiter(exact.scores, dtype=np.int64, count=count)
        values = np.fromiter(exact.scores.values(), dtype=np.float64, count=count)
        keep = self.admits(np.fromiter(exact.flags.values(), dtype=np.int64, count=count))
        return ids[keep], values[keep]


@dataclass
class Lists:
    """Where each list was cut off, and what the records read so far add up to per chunk."""

    repositories: list[UUID]
    terms: list[str]
    # the lists' sources: one per (repository, part) read; a list is (source, term)
    sources: list[tuple[UUID, int]] = field(default_factory=list)
    source_index: dict[tuple[int, int], int] = field(default_factory=dict)  # by position
    df: dict[tuple[int, int], int] = field(default_factory=dict)
    read: dict[tuple[int, int], int] = field(default_factory=dict)
    cut: dict[tuple[int, int], float] = field(default_factory=dict)  # stored-order impact
    base: dict[tuple[int, int], int] = field(default_factory=dict)  # the lists' id base
    # per candidate chunk (ids ascending): known contributions, lists seen in (bits), source
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    known: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    repo: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    flags: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # False once a chunk cannot make the top (its upper bound fell below the cut-off score, or
    # it was read by id and found out of scope): left out of the bounds from then on.
    alive: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    wants: list[Want] = field(default_factory=list)  # the lists still being decided

    def source(self, position: int, part: int) -> int:
        """The source of the ``position``-th repository's ``part`` (numbered as first read)."""
        key = (position, part)
        found = self.source_index.get(key)
        if found is None:
            found = self.source_index[key] = len(self.sources)
            self.sources.append((self.repositories[position], part))
        return found

    @property
    def postings_read(self) -> int:
        return sum(self.read.values())

    def add(
        self, ids: np.ndarray, known: np.ndarray, mask: np.ndarray, repo: np.ndarray,
        flags: np.ndarray,
    ) -> None:  # fmt: skip
        """Merge newly read records (each (chunk, list) pair is read once, so sums are ORs)."""
        every_repo = np.concatenate([self.repo, repo])
        every_flags = np.concatenate([self.flags, flags])
        self.ids, inverse = np.unique(np.concatenate([self.ids, ids]), return_inverse=True)
        size = len(self.ids)
        self.known = np.bincount(inverse, np.concatenate([self.known, known]), size)
        merged = np.concatenate([self.mask, mask]).astype(np.float64)
        self.mask = np.bincount(inverse, merged, size).astype(np.int64)
        self.repo = np.zeros(size, dtype=np.int64)
        self.repo[inverse] = every_repo
        self.flags = np.zeros(size, dtype=np.int64)
        self.flags[inverse] = every_flags
        alive = np.ones(size, dtype=bool)
        alive[inverse[: len(self.alive)]] = self.alive
        self.alive = alive

    def in_scope(self, flags: np.ndarray) -> np.ndarray:
        """Records some list still being decided admits (the others are dropped as read)."""
        keep = np.zeros(len(flags), dtype=bool)
        for want in self.wants:
            keep |= want.admits(flags)
        return keep

    def kill(self, ids: np.ndarray) -> None:
        """Chunks that cannot make the top: out of the bounds from now on."""
        where = np.searchsorted(self.ids, ids)
        found = where < len(self.ids)
        found[found] = self.ids[where[found]] == ids[found]
        self.alive[where[found]] = False


@dataclass
class State:
    ids: np.ndarray  # candidate chunk ids still alive, ascending
    index: np.ndarray  # their positions in the lists' arrays
    lower: np.ndarray
    upper: np.ndarray
    flags: np.ndarray
    # per source (repository part): the best score a chunk of it seen in no list can still have
    unseen: np.ndarray
    source_flags: np.ndarray

    def unseen_for(self, want: Want) -> float:
        """The best score a chunk ``want`` admits and seen in no list can still have."""
        admitted = self.unseen[want.admits(self.source_flags)]
        return float(admitted.max()) if len(admitted) else 0.0


def bounds(lists: Lists, cut: np.ndarray, boost: float, informative_mask: int) -> State:
    terms = len(lists.terms)
    unseen = cut.sum(axis=1) * boost
    source_flags = np.asarray([part & 3 for _r, part in lists.sources], dtype=np.int64)
    index = np.flatnonzero(lists.alive)
    ids, known, mask = lists.ids[index], lists.known[index], lists.mask[index]
    repo, flags = lists.repo[index], lists.flags[index]
    missing = np.zeros(len(ids), dtype=np.float64)
    maybe_all = np.ones(len(ids), dtype=bool)
    for j in range(terms):  # one term at a time: no candidates x terms temporaries
        seen = (mask & (1 << j)) != 0
        column = cut[:, j]
        if column.any():
            missing_cut = column[repo]
            missing += np.where(seen, 0.0, missing_cut)
            if informative_mask >> j & 1:
                maybe_all &= seen | (missing_cut > 0)
        elif informative_mask >> j & 1:
            # An informative word not seen is known absent once its lists are read to the end.
            maybe_all &= seen
    has_all = (mask & informative_mask) == informative_mask
    lower = known * np.where(has_all, boost, 1.0)
    upper = (known + missing) * np.where(maybe_all, boost, 1.0)
    return State(ids=ids, index=index, lower=lower, upper=upper, flags=flags, unseen=unseen,
                 source_flags=source_flags)  # fmt: skip


def most_promising(state: State, exact: ExactScores, want: Want) -> list[int]:
    """The ``want.limit`` unread candidates of a list with the highest upper bounds."""
    limit = want.limit
    keep = want.admits(state.flags)
    seen = set(exact.scores)
    if seen:
        keep &= ~np.isin(state.ids, np.fromiter(seen, dtype=np.int64))
    index = np.flatnonzero(keep)
    if len(index) > limit:
        index = index[np.argpartition(-state.upper[index], limit - 1)[:limit]]
    return [int(i) for i in state.ids[index]]


def decide(
    state: State, exact: ExactScores, want: Want
) -> tuple[list[tuple[int, float]] | None, list[int], int, float]:
    """The final ranking of one list when the bounds settle it, else the chunks worth reading
    by id (the first ``CHECK_BATCH`` rivals, and how many there are) and the score the last of
    the current top has."""
    ids, limit = state.ids, want.limit
    keep = want.admits(state.flags)
    # (chunks read by id and found out of scope are no longer alive: not in ``state``)
    ids, lower, upper = ids[keep], state.lower[keep].copy(), state.upper[keep].copy()
    checked = np.zeros(len(ids), dtype=bool)
    known_ids, known_values = want.admitted(exact)
    if len(known_ids):
        where = np.searchsorted(ids, known_ids)
        found = (where < len(ids)) & (ids[np.minimum(where, len(ids) - 1)] == known_ids)
        lower[where[found]] = known_values[found]
        upper[where[found]] = known_values[found]
        checked[where[found]] = True
        # Chunks read by id but seen in no list yet (the seed): exact, in scope.
        ids = np.concatenate([ids, known_ids[~found]])
        lower = np.concatenate([lower, known_values[~found]])
        upper = np.concatenate([upper, known_values[~found]])
        checked = np.concatenate([checked, np.ones(int((~found).sum()), dtype=bool)])
    if len(ids) > limit:
        head = np.argpartition(-lower, limit - 1)[:limit]
        cutoff = lower[head].min()
        head = np.flatnonzero(lower >= cutoff)  # every tie of the last place
    else:
        head = np.arange(len(ids))
    order = head[np.lexsort((ids[head], -lower[head]))]
    top = order[:limit]
    theta = float(lower[top[-1]]) if len(top) == limit else 0.0
    in_top = np.zeros(len(ids), dtype=bool)
    in_top[top] = True
    # Rivals: outside the top, bounds not settled, and could still rank above its last member.
    rival = np.flatnonzero(~in_top & (lower < upper))
    if len(top) == limit:
        last_id = ids[top[-1]]
        rival = rival[(upper[rival] > theta) | ((upper[rival] == theta) & (ids[rival] < last_id))]
    unchecked_top = [int(i) for i in ids[top[~checked[top]]]]
    unseen = state.unseen_for(want)
    settled = unseen < theta or (unseen == 0 and len(top) < limit)
    if settled and not unchecked_top and not len(rival):
        return [(int(ids[i]), float(lower[i])) for i in top], [], 0, theta
    if not settled and not unchecked_top:
        return None, [], 0, theta  # only reading deeper can settle it
    rival = rival[~checked[rival]]
    count = len(unchecked_top) + len(rival)
    if len(rival) > CHECK_BATCH:  # only the first batch is read: no need to sort them all
        rival = rival[np.argpartition(-upper[rival], CHECK_BATCH - 1)[:CHECK_BATCH]]
    rival = rival[np.argsort(-upper[rival], kind="stable")]
    return None, unchecked_top + [int(i) for i in ids[rival]], count, theta


def best_effort(state: State, exact: ExactScores, want: Want) -> list[tuple[int, float]]:
    ranked = []
    admitted = want.admits(state.flags)
    for i, chunk_id in enumerate(state.ids):
        cid = int(chunk_id)
        if cid in exact.rejected or not admitted[i]:
            continue
        ranked.append((cid, exact.scores.get(cid, float(state.lower[i]))))
    ranked.sort(key=lambda item: (-item[1], item[0]))
    return ranked[: want.limit]
