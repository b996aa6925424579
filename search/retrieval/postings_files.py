"""Term posting lists in pack files that every search process of a host maps: one copy, in the
page cache, however many web processes there are (``postings_cache.kept_lists`` decides when).

Layout (``root()``: ``REPO_SEARCH_POSTINGS_DIR``, by default ``<REPO_SEARCH_DATA_DIR>/postings``)::

    <root>/<repository uuid>/<generation>-<statistics' build>/<sequence>.v<VERSION>.pack
    <root>/<repository uuid>/<generation>-<statistics' build>/.lock

named exactly like the lists' cache key (the build is ``xmin`` of the generation's facet rows,
new with every rebuild), so a rebuilt generation is never served an old list. A pack's format,
and how its lists are checked, are ``postings_pack``'s. A process maps each pack once (``find``)
and serves its lists as read-only, zero-copy views of the mapping; it unmaps a pack once it is
merged away or removed (``on_unmapped`` tells what keeps views of it), and lists the
mapped generations' directories every ``RELIST_SECONDS``, so that a swept generation's packs are
not kept mapped (and their pages on the host) by an idle process. It also keeps where it found
each list (``KNOWN_LISTS`` of them, about 100 bytes each): a list no longer at hand costs a
dictionary look-up and two views, not a search of the packs' indexes.

The first process that needs lists writes them (``write_lists``) under their generation's lock
(``postings_sweep.generation_locks``: ``flock`` on ``.lock``): a new pack per generation and
search (temporary name, ``rename``), merged with the newest packs (those up to twice what is
merged so far, or past ``MAX_PACKS``), those merged removed; newer packs win. Packs are not
``fsync``ed: they are a cache of the database; one torn by a crash fails its size or a list's
CRC, and its lists are read again. The directories of generations whose statistics are no longer
live go (``postings_sweep.sweep_files``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
from django.conf import settings

from search.retrieval.postings_pack import (
    SUFFIX,
    Corrupt,
    Pack,
    StoredList,
    encode,
    fields_crc,
    padded,
    term_hash,
)

logger = logging.getLogger(__name__)
MAX_PACKS = 3  # packs of a generation past which the newest are merged, whatever their size
RELIST_SECONDS = 2.0  # a process looks for packs others wrote (and merged away) this often
MAPPED_GENERATIONS = 4096  # generations whose packs a process keeps mapped
KNOWN_LISTS = 65536  # lists whose place in the packs a process keeps (~120 bytes each)
_warned: set[str] = set()
_root: list[Any] = [None, None]  # the settings root() was last given, and its answer


# repository (its UUID as an int), generation, statistics' build, term: ``postings_cache.Key``
Key = tuple[int, int, int, str]
Generation = tuple[int, int, int]
Terms = tuple[list[bytes], list[int], np.ndarray]  # names, their hashes, the hashes as uint64


def root() -> Path | None:
    """Where the packs live (None: ``REPO_SEARCH_POSTINGS_DIR=off``, each process reads its own
    lists from the database)."""
    value = getattr(settings, "REPO_SEARCH_POSTINGS_DIR", None)
    given = (value, settings.REPO_SEARCH_DATA_DIR)
    if _root[0] != given:  # one Path while the settings hold (compared by identity at each search)
        _root[:] = [given, _root_of(value)]
    return _root[1]


def _root_of(value: object) -> Path | None:
    if value is None or str(value).strip() == "":
        return Path(settings.REPO_SEARCH_DATA_DIR) / "postings"
    if str(value).strip().lower() == "off":
        return None
    return Path(str(value)).expanduser()


def generation_dir(base: Path, key: Generation | Key) -> Path:
    return base / str(UUID(int=key[0])) / f"{key[1]}-{key[2]}"


def warn_once(reason: str, *args: object) -> None:
    """A warning per process and reason (a directory that cannot be written is not news at every
    search)."""
    if reason not in _warned:
        _warned.add(reason)
        logger.warning(reason + "; posting lists read from the database instead", *args)


class _Packs:
    """The packs of one generation this process maps, newest first."""

    __slots__ = ("base", "directory", "generation", "known", "listed", "packs", "refused", "stamp")

    def __init__(self, base: Path, generation: Generation) -> None:
        self.base, self.directory = base, generation_dir(base, generation)
        self.generation = generation
        self.packs: list[Pack] = []
        # where this process found a term's whole list: its position << 8 | its pack's index in
        # ``packs`` (emptied when they change): ~120 bytes a list against ~650 for one at hand
        self.known: dict[str, int] = {}
        self.refused: set[str] = set()  # names of packs refused whole (removed at the next write)
        self.stamp: int | None = -1  # the directory's mtime when listed
        self.listed = 0.0

    def refresh(self, *, force: bool = False, map_new: bool = True) -> bool:
        """Map packs written since the last listing (unless not ``map_new``), drop those merged
        away: whether any changed."""
        if map_new:
            self.listed = time.monotonic()
        try:
            stamp: int | None = os.stat(self.directory).st_mtime_ns
        except OSError:
            stamp = None
        if stamp == self.stamp and not force:
            return False
        if map_new:  # else the next listing looks again
            self.stamp = stamp
        names = {}
        with contextlib.suppress(OSError):
            for item in os.scandir(self.directory):
                stem = item.name[: -len(SUFFIX)]
                if item.name.endswith(SUFFIX) and stem.isdigit():
                    names[item.name] = int(stem)
        kept = {p.path.name: p for p in self.packs if p.path.name in names}
        for name, sequence in names.items():
            if name in kept or name in self.refused or not map_new:
                continue
            try:
                kept[name] = Pack(self.directory / name, sequence)
            except FileNotFoundError:
                continue  # merged away meanwhile
            except (Corrupt, OSError, ValueError) as error:
                logger.warning("posting list pack %s refused (%s); read again",
                               self.directory / name, error)  # fmt: skip
                self.refused.add(name)
        self.refused &= set(names)
        before = [p.path.name for p in self.packs]
        self.packs = sorted(kept.values(), key=lambda p: -p.sequence)
        if any(name not in kept for name in before):
            _unmapped(self.generation)  # merged away or removed: let go of the views too
        changed = before != [p.path.name for p in self.packs]
        if changed:
            self.known = {}
        return changed

    def lookup(self, terms: Terms, keys: list[Key | None], found: dict[Key, StoredList]) -> None:
        """The lists of ``keys`` (``keys[j]``: ``terms``' j-th term's, None: not wanted) in these
        packs, newest first, into ``found``."""
        names, hashes, array = terms
        known, packs, left = self.known, self.packs, []
        for j, key in enumerate(keys):
            if key is None or key in found:
                continue
            code = known.get(key[3])
            if code is None:
                left.append(j)
            else:
                found[key] = packs[code & 255].view(code >> 8)
        for index, pack in enumerate(packs):
            if not left:
                return
            positions = pack.hashes.searchsorted(array).tolist()
            missed = []
            for j in left:
                position, stored = positions[j], None
                while position < pack.count and int(pack.hashes[position]) == hashes[j]:
                    try:
                        stored = pack.get(position, names[j])
                    except Corrupt:
                        break  # an older pack may hold it whole; else it is read again
                    if stored is not None:
                        found[keys[j]] = stored  # type: ignore[index]
                        if index < 256:
                            known[keys[j][3]] = position << 8 | index  # type: ignore[index]
                        break
                    position += 1
                if stored is None:
                    missed.append(j)
            left = missed


_PACKS: OrderedDict[Generation, _Packs] = OrderedDict()  # the least recently searched first
_LOCK = threading.RLock()
_LISTENERS: list[Callable[[Generation], object]] = []
_checked = [0.0]  # when the generations not searched since were last looked at


def on_unmapped(listener: Callable[[Generation], object]) -> None:
    """Call ``listener(generation)`` when a pack of ``generation`` is let go of (merged away,
    removed, or its generation no longer mapped): what keeps views of it should let go too,
    or the pack stays mapped."""
    _LISTENERS.append(listener)


def _unmapped(generation: Generation) -> None:
    for listener in _LISTENERS:
        listener(generation)


def forget() -> None:
    """Unmap every pack (as a process that has read none yet)."""
    with _LOCK:
        for generation in list(_PACKS):
            _unmapped(generation)
        _PACKS.clear()


def mapped_packs() -> int:
    """The packs this process maps."""
    with _LOCK:
        return sum(len(packs.packs) for packs in _PACKS.values())


def _generation(base: Path, generation: Generation) -> _Packs:
    packs = _PACKS.get(generation)
    if packs is None or (packs.base is not base and packs.base != base):
        packs = _Packs(base, generation)
        packs.refresh()
        _PACKS[generation] = packs
        while len(_PACKS) > MAPPED_GENERATIONS:
            _unmapped(_PACKS.popitem(last=False)[0])
    _PACKS.move_to_end(generation)
    return packs


def release_gone(*, now: bool = False) -> None:
    """Every ``RELIST_SECONDS`` (``now``: at once), list the mapped generations' directories
    again where they changed: packs merged away or removed (a swept generation: all) are
    unmapped, whether or not a search needs that generation's lists, and a generation with no
    pack left is forgotten. Packs written meanwhile are mapped when a search needs them."""
    if not now and time.monotonic() - _checked[0] < RELIST_SECONDS:
        return
    with _LOCK:
        _checked[0] = time.monotonic()
        for generation, packs in list(_PACKS.items()):
            if packs.packs:
                packs.refresh(map_new=False)
            if not packs.packs:
                del _PACKS[generation]


def _by_generation(keys: list[Key]) -> tuple[Terms, dict[Generation, list[Key | None]]]:
    """The terms of ``keys`` (names, hashes, hashes as an array) and each generation's keys,
    one per term (None: that term's list is not wanted there)."""
    order: dict[str, int] = {}
    for key in keys:
        order.setdefault(key[3], len(order))
    names = [term.encode() for term in order]
    hashes = [term_hash(name) for name in names]
    grouped: dict[Generation, list[Key | None]] = {}
    for key in keys:
        generation = key[:3]
        if generation not in grouped:
            grouped[generation] = [None] * len(order)
        grouped[generation][order[key[3]]] = key
    return (names, hashes, np.array(hashes, np.uint64)), grouped


def find(base: Path, keys: list[Key], *, fresh: bool = False) -> dict[Key, StoredList]:
    """Those of ``keys`` held whole by the generations' packs, as views of the mappings; a
    generation's directory is listed again when one is missing and it changed (``fresh``: in
    any case), or every ``RELIST_SECONDS``."""
    found: dict[Key, StoredList] = {}
    with _LOCK:
        if not fresh:
            keys = _known(base, keys, found)
            if not keys:
                return found
        terms, grouped = _by_generation(keys)
        for generation, wanted in grouped.items():
            packs = _generation(base, generation)
            if fresh or time.monotonic() - packs.listed > RELIST_SECONDS:
                packs.refresh(force=fresh)
            packs.lookup(terms, wanted, found)
            missing = any(k is not None and k not in found for k in wanted)
            if missing and not fresh and packs.refresh():
                packs.lookup(terms, wanted, found)
        _forget_positions()
    return found


def _known(base: Path, keys: list[Key], found: dict[Key, StoredList]) -> list[Key]:
    """Those of ``keys`` whose place this process knows, into ``found`` (a search's lists, most
    of the time: one dictionary look-up each); the others, to look up in the packs' indexes."""
    now, others, last = time.monotonic(), [], None
    packs: _Packs | None = None
    for key in keys:
        generation = key[:3]
        if generation != last:
            last, packs = generation, _PACKS.get(generation)
            if packs is not None and (
                packs.base is not base or now - packs.listed > RELIST_SECONDS
            ):
                packs = None  # to be listed again first
            elif packs is not None:
                _PACKS.move_to_end(generation)
        code = packs.known.get(key[3]) if packs is not None else None
        if code is None:
            others.append(key)
        else:
            found[key] = packs.packs[code & 255].view(code >> 8)  # type: ignore[union-attr]
    return others


def _forget_positions() -> None:
    """Past ``KNOWN_LISTS`` positions known, those of the generations searched least recently
    are forgotten (their lists are looked up in the packs' indexes again)."""
    known = sum(len(packs.known) for packs in _PACKS.values())
    for packs in _PACKS.values():  # the least recently searched first
        if known <= KNOWN_LISTS:
            return
        known -= len(packs.known)
        packs.known = {}


def write_lists(base: Path, lists: dict[Key, StoredList]) -> dict[Key, StoredList]:
    """Write the lists of each generation to a new pack, merged with the newest packs, while the
    caller holds the generations' locks; the mapped views of those written. Lists that cannot be
    written (a directory that is not writable, a full disk) are left out, with a warning."""
    written: list[Key] = []
    with _LOCK:
        (names, _hashes, _array), grouped = _by_generation(list(lists))
        for generation, wanted in grouped.items():
            packs = _generation(base, generation)
            packs.refresh(force=True)
            mine = {names[j]: lists[key] for j, key in enumerate(wanted) if key is not None}
            try:
                _write(packs, mine)
            except OSError as error:
                warn_once("posting list packs not written in %s (%s)", packs.directory, error)
                continue
            written += [key for key in wanted if key is not None]
        return find(base, written, fresh=True)


def _write(packs: _Packs, lists: dict[bytes, StoredList]) -> None:
    """A new pack of ``lists`` and the newest packs that are no more than twice what is merged so
    far (or past ``MAX_PACKS``); those merged, and those refused whole, removed."""
    new: dict[bytes, tuple[int, bytes, tuple[int, ...]]] = {}
    for name, found in lists.items():
        offsets = np.ascontiguousarray(found.offsets, dtype=np.uint32)
        words = np.ascontiguousarray(found.words, dtype=np.uint32)
        raw = name + b"\0" * (padded(len(name)) - len(name)) + offsets.tobytes() + words.tobytes()
        fields = (len(offsets), len(name), found.base, found.span)
        entry = (*fields, zlib.crc32(raw, fields_crc(*fields)))
        new[name] = (term_hash(name), raw, entry)
    merged: list[Pack] = []
    size = sum(len(raw) for _h, raw, _e in new.values())
    for pack in packs.packs:  # newest first
        if pack.size > 2 * size and len(packs.packs) - len(merged) + 1 <= MAX_PACKS:
            break
        merged.append(pack)
        size += pack.size
    items: dict[bytes, tuple[int, bytes, tuple[int, ...]]] = {}
    for pack in reversed(merged):  # oldest first: newer lists replace older ones
        for position in range(pack.count):
            kept = pack.raw(position)
            if kept is not None:
                items[bytes(kept[1][: kept[2][1]])] = kept
    items.update(new)
    sequence = 1 + max([p.sequence for p in packs.packs] +
                       [int(n[: -len(SUFFIX)]) for n in packs.refused] + [0])  # fmt: skip
    path = packs.directory / f"{sequence}{SUFFIX}"
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(encode(sorted(items.values(), key=lambda item: item[0])))
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    for gone in [p.path for p in merged] + [packs.directory / n for n in packs.refused]:
        gone.unlink(missing_ok=True)
