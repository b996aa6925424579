"""The index stage's walk in bounded batches: at most one batch of decoded files in memory.

The walker (``indexing.walking``) decides which files are indexed and decodes them; this module
only feeds it the tree a batch at a time. Each call gets every ``.gitignore`` of the tree (so
every rule still applies) and ``only_paths`` = the batch, which is what ``walk_tree`` offers for
incremental runs; the batches come in tree order, so the files and the skips come out in the
order one walk over the whole tree gives. A skipped directory is reported by each batch that
meets it and kept once here.

The stage walks twice. The first pass (state ``walking``) classifies every file and keeps only
its tree entry, and the decoded text of the first batch's worth of changed files; so the job
knows its totals and skips before anything is chunked, and a repository that fits in one batch
is read once. The second pass (``chunk_inputs``) hands the changed files to the chunker in tree
order: the kept ones, then the rest read again a batch at a time.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from django.conf import settings

from indexing.git.tree import TreeEntry
from indexing.walking import SKIP_UNREADABLE, SkippedFile, WalkedFile, walk_tree

logger = logging.getLogger(__name__)

MAX_SKIPPED_LISTED = 200  # skipped paths kept on the job with their reason (all are counted)


@dataclass(frozen=True)
class BatchLimits:
    """How much of the tree is read and decoded at once."""

    max_bytes: int  # blob bytes (as the tree says) read per batch
    max_files: int  # tree entries per batch
    max_file_bytes: int  # the walker's per-file limit: larger files are never read

    @classmethod
    def from_settings(cls) -> BatchLimits:
        return cls(
            max_bytes=settings.REPO_SEARCH_INDEX_BATCH_MB * 1024 * 1024,
            max_files=settings.REPO_SEARCH_INDEX_BATCH_FILES,
            max_file_bytes=settings.REPO_SEARCH_MAX_FILE_BYTES,
        )


def entry_batches(entries: Sequence[TreeEntry], limits: BatchLimits) -> Iterator[list[TreeEntry]]:
    """Consecutive runs of ``entries`` within the limits (a lone entry over them is its own
    batch). Entries the walker will not read (over the file limit) cost no bytes."""
    batch: list[TreeEntry] = []
    size = 0
    for entry in entries:
        cost = entry.size if entry.size <= limits.max_file_bytes else 0
        if batch and (len(batch) >= limits.max_files or size + cost > limits.max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(entry)
        size += cost
    if batch:
        yield batch


def _is_gitignore(entry: TreeEntry) -> bool:
    return entry.path.rsplit("/", 1)[-1] == ".gitignore"


class BatchedWalk:
    """Walks chosen entries of one tree a batch at a time, every ``.gitignore`` applied."""

    def __init__(
        self, entries: Sequence[TreeEntry], read_blob: Callable[[str], bytes], limits: BatchLimits
    ) -> None:
        self.limits = limits
        self._gitignores = [entry for entry in entries if _is_gitignore(entry)]
        self._gitignore_shas = {entry.sha for entry in self._gitignores}
        self._gitignore_blobs: dict[str, bytes] = {}  # read once, not once per batch
        self._read_blob = read_blob

    def _read(self, sha: str) -> bytes:
        if sha not in self._gitignore_shas:
            return self._read_blob(sha)
        if sha not in self._gitignore_blobs:
            self._gitignore_blobs[sha] = self._read_blob(sha)
        return self._gitignore_blobs[sha]

    def batches(
        self, chosen: Sequence[TreeEntry]
    ) -> Iterator[tuple[list[WalkedFile], list[SkippedFile]]]:
        """``(files, skips)`` per batch of ``chosen`` (in tree order, directories once)."""
        reported: set[str] = set()
        for batch in entry_batches(chosen, self.limits):
            paths = {entry.path for entry in batch}
            others = [entry for entry in self._gitignores if entry.path not in paths]
            result = walk_tree(
                [*others, *batch], self._read,
                max_file_bytes=self.limits.max_file_bytes, only_paths=paths,
            )  # fmt: skip
            skips = []
            for skip in result.skipped:
                if skip.path.endswith("/"):
                    if skip.path in reported:
                        continue
                    reported.add(skip.path)
                skips.append(skip)
            yield result.files, skips
            result.files.clear()  # the caller is done with them: this batch's texts go now


@dataclass
class WalkSummary:
    """What the first pass found: every indexed file's entry, no text but the kept ones."""

    changed: list[TreeEntry] = field(default_factory=list)  # to chunk, in tree order
    carried: list[str] = field(default_factory=list)  # unchanged since the live generation
    kept: deque[WalkedFile] = field(default_factory=deque)  # the first changed files, decoded
    skipped_count: int = 0
    skipped_listed: list[dict[str, str]] = field(default_factory=list)
    failures: list[dict[str, str]] = field(default_factory=list)

    def skip(self, skipped: SkippedFile) -> None:
        self.skipped_count += 1
        if len(self.skipped_listed) < MAX_SKIPPED_LISTED:
            self.skipped_listed.append({"path": skipped.path, "reason": skipped.reason})
        if skipped.reason.startswith(SKIP_UNREADABLE):
            self.failures.append({"path": skipped.path, "reason": skipped.reason})


def classify(
    walk: BatchedWalk,
    chosen: Sequence[TreeEntry],
    previous: dict[str, str],
    on_batch: Callable[[], None] = lambda: None,
) -> WalkSummary:
    """The first pass: which of ``chosen`` are indexed (changed or carried) and which skipped.

    The decoded text of changed files is kept while it fits in one batch (by bytes and count),
    then dropped; ``on_batch`` runs after each batch (a heartbeat)."""
    summary = WalkSummary()
    by_path = {entry.path: entry for entry in chosen}
    kept_bytes, keeping = 0, True
    for files, skips in walk.batches(chosen):
        for skipped in skips:
            summary.skip(skipped)
        for walked in files:
            if previous.get(walked.path) == walked.sha:
                summary.carried.append(walked.path)
                continue
            summary.changed.append(by_path[walked.path])
            keeping = keeping and (
                len(summary.kept) < walk.limits.max_files
                and kept_bytes + walked.size <= walk.limits.max_bytes
            )
            if keeping:
                summary.kept.append(walked)
                kept_bytes += walked.size
        on_batch()
    return summary


def chunk_inputs(walk: BatchedWalk, summary: WalkSummary) -> Iterator[WalkedFile]:
    """The second pass: every changed file decoded, in tree order, one batch held at a time.

    A file the first pass indexed but this read cannot (its blob became unreadable) is added to
    ``summary.failures`` and left out."""
    rest = summary.changed[len(summary.kept) :]
    while summary.kept:
        yield summary.kept.popleft()  # released as soon as the chunker is done with it
    for files, skips in walk.batches(rest):
        for skipped in skips:
            logger.warning("path=%s not readable a second time: %s", skipped.path, skipped.reason)
            summary.failures.append({"path": skipped.path, "reason": skipped.reason})
        pending = deque(files)
        files.clear()
        while pending:
            yield pending.popleft()
