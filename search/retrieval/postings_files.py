"""Term posting lists in pack files that every search process of a host maps: one copy, in the
page cache, however many web processes there are (``postings_cache.kept_lists`` decides when).

Layout (``root()``: ``REPO_SEARCH_POSTINGS_DIR``, by default ``<REPO_SEARCH_DATA_DIR>/postings``)::

    <root>/<repository uuid>/<generation>-<statistics' build>/<sequence>.v<VERSION>.pack
    <root>/<repository uuid>/<generation>-<statistics' build>/.lock

named exactly like the lists' cache key (the build is ``xmin`` of the generation's facet rows,
new with every rebuild), so a rebuilt generation is never served an old list. A pack holds many
decoded lists of one generation, ready for the pass: a header (``HEADER``: magic, version,
entries, the file's size), the index (the terms' 64-bit hashes, sorted, then one ``ENTRY`` each:
where its term starts, records, the term's length, base, span, CRC-32 of those four and of the
term and arrays), then each list: its term, the records' ids less the base, their words (native
``uint32``, 8-byte aligned). A process maps each pack once (``find``) and serves its lists as
read-only, zero-copy views of the mapping: it holds one mapping and a byte per list of a pack,
not an object per list. The header is checked when a pack is mapped (not the whole index: a
process's first search maps ~3 packs per repository), a list (term, bounds, CRC of its entry and
arrays, span) the first time this process serves it (a damaged hash only misses): a truncated or
corrupt pack or list is refused and read again, never ranked.

The first process that needs lists writes them (``write_lists``) under their generation's lock
(``postings_cache.generation_locks``: ``flock`` on ``.lock``): a new pack per generation and
search (temporary name, ``rename``), merged with the newest packs (those up to twice what is
merged so far, or past ``MAX_PACKS``), those merged removed; newer packs win. Packs are not
``fsync``ed: they are a cache of the database; one torn by a crash fails its size or a list's
CRC, and its lists are read again. The directories of generations whose statistics are no longer
live go (``postings_cache.sweep_files``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import mmap
import os
import struct
import threading
import time
import zlib
from pathlib import Path
from typing import NamedTuple
from uuid import UUID

import numpy as np
from django.conf import settings

from search.lru import Lru

logger = logging.getLogger(__name__)
MAGIC, VERSION = b"RSPK", 3
# magic, version, entries, the file's size (native order: a pack written on
# one host is read on that host only; another byte order fails MAGIC's neighbours, not silently)
HEADER = struct.Struct("=4sIQQ")
# where the list's term starts, records, the term's length, base, span, CRC-32 of ``FIELDS`` (the
# four before it) and of the term and arrays
ENTRY = struct.Struct("=QIIqQI4x")
FIELDS = struct.Struct("=IIqQ")
# The version in the name: processes of two versions (a rolling restart) each keep their own
# packs instead of refusing, and removing, each other's.
SUFFIX = f".v{VERSION}.pack"
MAX_PACKS = 3  # packs of a generation past which the newest are merged, whatever their size
RELIST_SECONDS = 2.0  # a process looks for packs others wrote (and merged away) this often
MAPPED_GENERATIONS = 4096  # generations whose packs a process keeps mapped
UNCHECKED, WHOLE, REFUSED = 0, 1, 2
_warned: set[str] = set()


class StoredList(NamedTuple):
    offsets: np.ndarray  # uint32, read-only
    words: np.ndarray  # uint32, read-only
    base: int
    span: int
    mapped: bool = False  # the arrays are a mapped pack's (else a copy in this process)


# repository (its UUID as an int), generation, statistics' build, term: ``postings_cache.Key``
Key = tuple[int, int, int, str]
Generation = tuple[int, int, int]
Terms = tuple[list[bytes], list[int], np.ndarray]  # names, their hashes, the hashes as uint64


def root() -> Path | None:
    """Where the packs live (None: ``REPO_SEARCH_POSTINGS_DIR=off``, each process reads its own
    lists from the database)."""
    value = getattr(settings, "REPO_SEARCH_POSTINGS_DIR", None)
    if value is None or str(value).strip() == "":
        return Path(settings.REPO_SEARCH_DATA_DIR) / "postings"
    if str(value).strip().lower() == "off":
        return None
    return Path(value).expanduser()


def generation_dir(base: Path, key: Generation | Key) -> Path:
    return base / str(UUID(int=key[0])) / f"{key[1]}-{key[2]}"


def warn_once(reason: str, *args: object) -> None:
    """A warning per process and reason (a directory that cannot be written is not news at every
    search)."""
    if reason not in _warned:
        _warned.add(reason)
        logger.warning(reason + "; posting lists read from the database instead", *args)


def term_hash(name: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(name, digest_size=8).digest(), "little")


class Corrupt(Exception):
    """A pack or list that does not hold what its header, index and name say."""


class Pack:
    """One pack mapped read-only; ``state``: a byte per list (unchecked, whole, refused)."""

    __slots__ = ("count", "entries", "hashes", "mm", "path", "sequence", "size", "state", "words")

    def __init__(self, path: Path, sequence: int) -> None:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size < HEADER.size:
                raise Corrupt(f"{size} bytes, shorter than a header")
            mm = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        magic, version, count, stated = HEADER.unpack_from(mm, 0)
        if magic != MAGIC or version != VERSION:
            raise Corrupt(f"magic {magic!r} version {version}")
        if stated != size:
            raise Corrupt(f"{size} bytes, the header says {stated}")
        end = HEADER.size + count * (8 + ENTRY.size)
        if end > size:
            raise Corrupt(f"an index of {count} lists past the end")
        self.path, self.sequence, self.mm, self.count, self.size = path, sequence, mm, count, size
        self.hashes = np.frombuffer(mm, np.uint64, count, HEADER.size)
        self.entries = HEADER.size + 8 * count
        self.words = np.frombuffer(mm, np.uint32)  # the lists are slices of it
        self.state = bytearray(count)

    def entry(self, position: int) -> tuple[int, int, int, int, int, int]:
        return ENTRY.unpack_from(self.mm, self.entries + ENTRY.size * position)  # type: ignore[return-value]

    def get(self, position: int, name: bytes) -> StoredList | None:
        """The list at ``position`` if it is ``name``'s (None: another term of the same hash).
        Raises Corrupt for one that is not whole."""
        start, records, length, base, span, _crc = ENTRY.unpack_from(
            self.mm, self.entries + ENTRY.size * position
        )
        if length != len(name) or self.mm[start : start + length] != name:
            return None
        if self.state[position] != WHOLE and not self.whole(position):
            raise Corrupt(f"list {position} refused")
        data = (start + length + 7) // 8 * 2  # in uint32
        words = self.words
        return StoredList(words[data : data + records], words[data + records : data + 2 * records],
                          base, span, True)  # fmt: skip

    def whole(self, position: int) -> bool:
        """Whether the list at ``position`` is whole: checked once per process."""
        if self.state[position] == UNCHECKED:
            reason = self._refusal(position)
            self.state[position] = REFUSED if reason else WHOLE
            if reason:
                logger.warning("posting list %d of %s refused (%s); read again", position,
                               self.path, reason)  # fmt: skip
        return self.state[position] == WHOLE

    def _refusal(self, position: int) -> str | None:
        start, records, length, base, span, crc = self.entry(position)
        end = start + _padded(length) + 8 * records
        if start < HEADER.size or end > self.size:
            return "past the end of the pack"
        with memoryview(self.mm) as view:
            if zlib.crc32(view[start:end], _fields_crc(records, length, base, span)) != crc:
                return "arrays do not match their checksum"
        offsets = np.frombuffer(self.mm, np.uint32, records, end - 8 * records)
        return None if (int(offsets.max()) + 1 if records else 0) == span else "another span"

    def raw(self, position: int) -> tuple[int, bytes, tuple[int, ...]] | None:
        """A whole list's hash, bytes (term and arrays) and entry, to merge (None: refused)."""
        if not self.whole(position):
            return None
        start, records, length, base, span, crc = self.entry(position)
        end = start + _padded(length) + 8 * records
        return int(self.hashes[position]), self.mm[start:end], (records, length, base, span, crc)


def _fields_crc(records: int, length: int, base: int, span: int) -> int:
    return zlib.crc32(FIELDS.pack(records, length, base, span))


def _padded(length: int) -> int:
    return (length + 7) // 8 * 8


class _Packs:
    """The packs of one generation this process maps, newest first."""

    __slots__ = ("base", "directory", "listed", "packs", "refused", "stamp")

    def __init__(self, base: Path, generation: Generation) -> None:
        self.base, self.directory = base, generation_dir(base, generation)
        self.packs: list[Pack] = []
        self.refused: set[str] = set()  # names of packs refused whole (removed at the next write)
        self.stamp: int | None = -1  # the directory's mtime when listed
        self.listed = 0.0

    def refresh(self, *, force: bool = False) -> bool:
        """Map packs written since the last listing, drop those merged away: whether any
        changed."""
        self.listed = time.monotonic()
        try:
            stamp: int | None = os.stat(self.directory).st_mtime_ns
        except OSError:
            stamp = None
        if stamp == self.stamp and not force:
            return False
        self.stamp = stamp
        names = {}
        with contextlib.suppress(OSError):
            for item in os.scandir(self.directory):
                stem = item.name[: -len(SUFFIX)]
                if item.name.endswith(SUFFIX) and stem.isdigit():
                    names[item.name] = int(stem)
        kept = {p.path.name: p for p in self.packs if p.path.name in names}
        for name, sequence in names.items():
            if name in kept or name in self.refused:
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
        return before != [p.path.name for p in self.packs]

    def lookup(self, terms: Terms, keys: list[Key | None], found: dict[Key, StoredList]) -> None:
        """The lists of ``keys`` (``keys[j]``: ``terms``' j-th term's, None: not wanted) in these
        packs, newest first, into ``found``."""
        names, hashes, array = terms
        left = [j for j, key in enumerate(keys) if key is not None and key not in found]
        for pack in self.packs:
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
                        break
                    position += 1
                if stored is None:
                    missed.append(j)
            left = missed


_PACKS: Lru[Generation, _Packs] = Lru(MAPPED_GENERATIONS)
_LOCK = threading.RLock()


def forget() -> None:
    """Unmap every pack (as a process that has read none yet)."""
    with _LOCK:
        _PACKS.clear()


def _generation(base: Path, generation: Generation) -> _Packs:
    packs = _PACKS.get(generation)
    if packs is None or packs.base != base:
        packs = _Packs(base, generation)
        packs.refresh()
        _PACKS.put(generation, packs)
    return packs


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
    terms, grouped = _by_generation(keys)
    with _LOCK:
        for generation, wanted in grouped.items():
            packs = _generation(base, generation)
            if fresh or time.monotonic() - packs.listed > RELIST_SECONDS:
                packs.refresh(force=fresh)
            packs.lookup(terms, wanted, found)
            missing = any(k is not None and k not in found for k in wanted)
            if missing and not fresh and packs.refresh():
                packs.lookup(terms, wanted, found)
    return found


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
        raw = name + b"\0" * (_padded(len(name)) - len(name)) + offsets.tobytes() + words.tobytes()
        fields = (len(offsets), len(name), found.base, found.span)
        entry = (*fields, zlib.crc32(raw, _fields_crc(*fields)))
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
        temporary.write_bytes(_encode(sorted(items.values(), key=lambda item: item[0])))
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    for gone in [p.path for p in merged] + [packs.directory / n for n in packs.refused]:
        gone.unlink(missing_ok=True)


def _encode(items: list[tuple[int, bytes, tuple[int, ...]]]) -> bytes:
    at = HEADER.size + len(items) * (8 + ENTRY.size)
    entries = []
    for _hash, raw, (records, length, base, span, crc) in items:
        entries.append(ENTRY.pack(at, records, length, base, span, crc))
        at += len(raw)
    index = np.array([item[0] for item in items], np.uint64).tobytes() + b"".join(entries)
    head = HEADER.pack(MAGIC, VERSION, len(items), at)
    return head + index + b"".join(raw for _hash, raw, _entry in items)
