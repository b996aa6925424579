"""The fetch and index stages of an index run, one function per Celery task: fetch (``fetch.py``,
re-exported here), then walk, chunk, store and swap (the embed stage is ``embed.py``; shared
helpers ``run_context.py``).

Every function takes a job id, reloads the row, returns quietly when the job is gone or finished,
and records progress on the job. Re-running a stage converges: a fetch into a partial directory
starts over, rows of an unfinished generation are discarded before a new one is written, and the
live generation is only replaced by a complete one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from django.conf import settings

from indexing.chunking import chunk_file
from indexing.clone_paths import repository_dir
from indexing.git.tree import GitTreeReader
from indexing.models import IndexJob, JobState, Repository, SharedFile
from indexing.services import jobs
from indexing.services.branch_generations import (
    discard_unfinished_generations,
    next_generation,
    stored_files,
    swap_branch_generation,
)
from indexing.services.search_stats import refresh_search_stats
from indexing.services.stages.claims import StageClaim, drop_late_delivery
from indexing.services.stages.fetch import run_fetch
from indexing.services.stages.index_batches import BatchedWalk, BatchLimits, chunk_inputs, classify
from indexing.services.stages.run_context import check_alive, fail_job, load_run, record_timing
from indexing.services.storing import INSERT_BATCH_BYTES, FileToStore, StoredChunk, store_files
from indexing.walking import WalkedFile

logger = logging.getLogger(__name__)

__all__ = ["run_fetch", "run_index"]

HEARTBEAT_EVERY_FILES = 50


def _chunks_for(walked: WalkedFile) -> list[StoredChunk]:
    try:
        pieces = chunk_file(
            walked.text, walked.language, walked.path,
            prose_sections=settings.REPO_SEARCH_DOC_SECTIONS,
        )  # fmt: skip
    except Exception:  # a chunker bug must not lose the file: fall back to line windows
        logger.exception("chunking failed path=%s; using line windows", walked.path)
        pieces = chunk_file(walked.text, None, walked.path)
    return [
        StoredChunk(
            index=piece.index, start_line=piece.start_line, end_line=piece.end_line,
            symbol=piece.symbol or "", kind=piece.kind, content=piece.content,
            calls=tuple(piece.calls), is_test=piece.is_test,
        )
        for piece in pieces
    ]  # fmt: skip


def _changed_paths(
    reader: GitTreeReader, last_commit: str, entries: list, previous: dict[str, str]
) -> set[str] | None:
    """Paths whose blob changed since the branch's live generation, or None to walk everything.

    Unchanged files keep their rows, so the walk only needs to read changed blobs — unless a
    ``.gitignore`` changed, which can change which unchanged files belong in the index.
    """
    if not previous or not last_commit:
        return None
    try:
        old_entries = reader.list_tree(last_commit)
    except Exception:  # the old commit is not in the store (e.g. the clone was redone)
        return None

    def ignores(items: list) -> dict[str, str]:
        return {e.path: e.sha for e in items if e.path.rsplit("/", 1)[-1] == ".gitignore"}

    if ignores(old_entries) != ignores(entries):
        return None
    return {entry.path for entry in entries if previous.get(entry.path) != entry.sha}


def _still_running(job_id: int) -> None:
    check_alive(job_id)
    jobs.heartbeat(job_id)


def _to_store(walked: WalkedFile) -> FileToStore:
    text = walked.text
    return FileToStore(
        path=walked.path, blob_sha=walked.sha, size_bytes=walked.size,
        language=walked.language or "", is_test=walked.is_test, is_doc=walked.is_doc,
        chunks=_chunks_for(walked),
        line_count=text.count("\n") + (0 if text.endswith("\n") else 1),
    )  # fmt: skip


def run_index(job_id: int, *, task_id: str = "") -> bool:
    """Walk, chunk and store the fetched commit as a new generation, then swap it in.

    Memory stays bounded by ``REPO_SEARCH_INDEX_BATCH_MB`` / ``_FILES`` (``index_batches``):
    the walk keeps tree entries, not texts; files are read again a batch at a time, chunked
    and handed to the store as they come, which commits every few hundred chunks. The new
    generation stays invisible until the swap, after the last batch.
    """
    context = load_run(job_id)
    if context is None:
        return False
    job, repository = context.job, context.repository
    restartable = (JobState.CLONING, JobState.WALKING, JobState.CHUNKING, JobState.STORING)
    if drop_late_delivery(job, "index"):
        return False
    if job.state not in restartable or not job.commit:
        fail_job(job, f"index stage reached in state {job.state} without a fetched commit")
        return False
    if job.state != JobState.CLONING:
        logger.warning("job=%s index stage restarts after an interrupted run", job.pk)
    generation = next_generation(repository.pk)
    task = {"celery_task_id": task_id} if task_id else {}
    job = jobs.transition(job, JobState.WALKING, generation=generation, **task)
    claim = StageClaim.of(job)  # from here on, an earlier run of this stage writes nothing more
    discard_unfinished_generations(repository.pk)
    started = time.monotonic()
    branch = job.branch
    own_generation = branch.generation if branch else repository.active_generation
    last_commit = branch.last_indexed_commit if branch else repository.last_indexed_commit
    own = own_files(repository, own_generation)
    available = stored_files(repository.pk)
    limits = BatchLimits.from_settings()
    with GitTreeReader(repository_dir(repository.pk)) as reader:
        entries = reader.list_tree(job.commit)
        current = {entry.path: entry.sha for entry in entries}
        # A file any live generation (this branch's or another's) holds is reused, not stored.
        previous = {path: sha for path, sha in current.items() if (path, sha) in available}
        only_paths = _changed_paths(reader, last_commit, entries, own)
        chosen = entries if only_paths is None else [e for e in entries if e.path in only_paths]
        walk = BatchedWalk(entries, reader.read_blob, limits)
        summary = classify(walk, chosen, previous, on_batch=lambda: _still_running(job_id))
        if only_paths is not None:  # unchanged files were not walked: carried as they were
            unchanged = [path for path, sha in own.items() if current.get(path) == sha]
            summary.carried = list(dict.fromkeys([*unchanged, *summary.carried]))
        del entries, chosen
        changed, carried = len(summary.changed), len(summary.carried)
        job = claim.advance(
            job, JobState.CHUNKING, files_total=changed + carried,
            files_skipped=summary.skipped_count, files_done=carried,
            skipped_files=summary.skipped_listed,
            stage_timings=record_timing(job, "walking", started), failures=summary.failures,
        )  # fmt: skip
        started = storing_started = time.monotonic()
        chunks_total = 0

        def files_to_store() -> Iterator[FileToStore]:
            nonlocal job, chunks_total, storing_started
            for number, walked in enumerate(chunk_inputs(walk, summary), start=1):
                stored = _to_store(walked)
                del walked
                chunks_total += len(stored.chunks)
                yield stored
                if number % HEARTBEAT_EVERY_FILES == 0:
                    check_alive(job_id)
                    jobs.heartbeat(job_id, files_done=carried + number)
            # Every file is chunked; the store's last batch and the swap are what is left.
            job = claim.advance(
                job, JobState.STORING, files_done=changed + carried,
                chunks_total=chunks_total, failures=summary.failures,
                stage_timings=record_timing(job, "chunking", started),
            )  # fmt: skip
            storing_started = time.monotonic()

        store_files(
            repository.pk, generation, files_to_store(),
            on_batch=lambda _: _still_running(job_id), fence=claim.check,
            batch_bytes=min(INSERT_BATCH_BYTES, limits.max_bytes),
        )  # fmt: skip
    swapped = swap_branch_generation(
        repository.pk, job.branch_id, generation,
        [(path, current[path]) for path in summary.carried], job.commit,
        before_swap=claim.check,
        # BM25's statistics of the new generation (the default branch's or another's) are built
        # in the swap's own transaction, so no search sees it without them. Should the build
        # fail, full text counts them on the fly: slower, still exact.
        in_swap=refresh_search_stats,
    )  # fmt: skip
    jobs.heartbeat(job_id)
    IndexJob.objects.filter(pk=job.pk).update(
        chunks_total=swapped.chunk_count,
        stage_timings=record_timing(job, "storing", storing_started),
    )
    logger.info(
        "job=%s repository=%s branch=%s generation=%s files=%s changed=%s chunks=%s",
        job.pk, repository.pk, branch.name if branch else repository.branch, generation,
        swapped.file_count, changed, swapped.chunk_count,
    )  # fmt: skip
    return True


def own_files(repository: Repository, generation: int) -> dict[str, str]:
    """path -> blob sha of what a live generation shows (owned and shared rows)."""
    if not generation:
        return {}
    owned = repository.files.filter(generation=generation).values_list("path", "blob_sha")
    shared = SharedFile.objects.filter(repository=repository, generation=generation).values_list(
        "file__path", "file__blob_sha"
    )
    return {**dict(owned), **dict(shared)}
