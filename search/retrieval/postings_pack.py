"""One pack file of decoded term posting lists (``postings_files`` says where they live and who
writes them): its format, mapped read-only and checked, and encoded.

A pack holds many decoded lists of one generation, ready for the pass: a header (``HEADER``:
magic, version, entries, the file's size), the index (the terms' 64-bit hashes, sorted, then one
``ENTRY`` each: where its term starts, records, the term's length, base, span, CRC-32 of those
four and of the term and arrays), then each list: its term, the records' ids less the base, their
words (native ``uint32``, 8-byte aligned). A mapped pack serves its lists as read-only, zero-copy
views: a process holds one mapping and a byte per list of a pack, not an object per list. The
header is checked when a pack is mapped (not the whole index: a process's first search maps ~3
packs per repository), a list (term, bounds, CRC of its entry and arrays, span) the first time
this process serves it (a damaged hash only misses): a truncated or corrupt pack or list is
refused and read again, never ranked.
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
import struct
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

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
UNCHECKED, WHOLE, REFUSED = 0, 1, 2
_new = tuple.__new__


class StoredList(NamedTuple):
    offsets: np.ndarray  # uint32, read-only
    words: np.ndarray  # uint32, read-only
    base: int
    span: int
    mapped: bool = False  # the arrays are a mapped pack's (else a copy in this process)


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
        start, _records, length, *_rest = ENTRY.unpack_from(
            self.mm, self.entries + ENTRY.size * position
        )
        if length != len(name) or self.mm[start : start + length] != name:
            return None
        if self.state[position] != WHOLE and not self.whole(position):
            raise Corrupt(f"list {position} refused")
        return self.view(position)

    def view(self, position: int) -> StoredList:
        """The list at ``position``, found whole before (``get``)."""
        start, records, length, base, span, _crc = ENTRY.unpack_from(
            self.mm, self.entries + ENTRY.size * position
        )
        data = (start + length + 7) // 8 * 2  # in uint32
        words = self.words
        # tuple.__new__: a NamedTuple's own constructor is Python code, and a search makes one
        # per list and generation
        return _new(StoredList, (words[data : data + records],
                                 words[data + records : data + 2 * records], base, span, True))  # fmt: skip

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
        end = start + padded(length) + 8 * records
        if start < HEADER.size or end > self.size:
            return "past the end of the pack"
        with memoryview(self.mm) as view:
            if zlib.crc32(view[start:end], fields_crc(records, length, base, span)) != crc:
                return "arrays do not match their checksum"
        offsets = np.frombuffer(self.mm, np.uint32, records, end - 8 * records)
        return None if (int(offsets.max()) + 1 if records else 0) == span else "another span"

    def raw(self, position: int) -> tuple[int, bytes, tuple[int, ...]] | None:
        """A whole list's hash, bytes (term and arrays) and entry, to merge (None: refused)."""
        if not self.whole(position):
            return None
        start, records, length, base, span, crc = self.entry(position)
        end = start + padded(length) + 8 * records
        return int(self.hashes[position]), self.mm[start:end], (records, length, base, span, crc)


def fields_crc(records: int, length: int, base: int, span: int) -> int:
    return zlib.crc32(FIELDS.pack(records, length, base, span))


def padded(length: int) -> int:
    return (length + 7) // 8 * 8


def encode(items: list[tuple[int, bytes, tuple[int, ...]]]) -> bytes:
    at = HEADER.size + len(items) * (8 + ENTRY.size)
    entries = []
    for _hash, raw, (records, length, base, span, crc) in items:
        entries.append(ENTRY.pack(at, records, length, base, span, crc))
        at += len(raw)
    index = np.array([item[0] for item in items], np.uint64).tobytes() + b"".join(entries)
    head = HEADER.pack(MAGIC, VERSION, len(items), at)
    return head + index + b"".join(raw for _hash, raw, _entry in items)
