"""The fetch and index stages of an index run, one function per Celery task: fetch, then walk,
chunk, store and swap (the embed stage is ``embed.py``; shared helpers ``run_context.py``).

Every function takes a job id, reloads the row, returns quietly when the job is gone or finished,
and records progress on the job. Re-running a stage converges: a fetch into a partial directory
starts over, rows of an unfinished generation are discarded before a new one is written, and the
live generation is only replaced by a complete one.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from indexing.chunking import chunk_file
from indexing.clone_paths import repository_dir
from indexing.git.errors import GitFetchError
from indexing.git.fetch import fetch_branch, fetch_update
from indexing.git.tree import GitTreeReader
from indexing.models import IndexJob, JobState, Repository, RepositoryStatus
from indexing.services import jobs
from indexing.services.locks import clone_slot
from indexing.services.repositories import default_branch_taken
from indexing.services.stages import clone_budget
from indexing.services.stages.claims import StageClaim, drop_late_delivery
from indexing.services.stages.run_context import (
    TransientFailure,
    check_alive,
    fail_job,
    load_run,
    record_timing,
)
from indexing.services.storing import (
    FileToStore,
    StoredChunk,
    discard_unfinished_generations,
    store_files,
    swap_generation,
)
from indexing.walking import WalkedFile, walk_tree
from search.retrieval.corpus_stats import refresh_search_stats

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY_FILES = 50
MAX_SKIPPED_LISTED = 200  # skipped paths kept on the job with their reason (all are counted)


@dataclass(frozen=True)
class FetchLimits:
    """The operator's limits and credentials, passed to every fetch."""

    max_bytes: int
    timeout_s: float
    allow_private_hosts: bool
    allow_local_paths: bool
    token: str | None
    token_hosts: list[str]

    def as_kwargs(self) -> dict[str, Any]:
        return dict(self.__dict__)


def directory_size(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def run_fetch(job_id: int, *, task_id: str = "", final_attempt: bool = True) -> bool:
    """Fetch the repository's branch. True when the index stage should run next."""
    context = load_run(job_id)
    if context is None:
        return False
    job, repository = context.job, context.repository
    if drop_late_delivery(job, "fetch"):
        return False
    if job.state != JobState.QUEUED:
        job = jobs.transition(job, JobState.QUEUED)  # a retry after a crash: start over
    job = jobs.transition(job, JobState.CLONING, celery_task_id=task_id, attempts=job.attempts + 1)
    Repository.objects.filter(pk=repository.pk).update(
        status=RepositoryStatus.INDEXING if repository.active_generation == 0 else repository.status
    )
    started = time.monotonic()
    if clone_budget.seconds_left(job) < clone_budget.MIN_ATTEMPT_SECS:
        fail_job(job, clone_budget.exhausted_message(job))
        return False
    target = repository_dir(repository.pk)
    limits = FetchLimits(
        max_bytes=settings.REPO_SEARCH_MAX_REPO_SIZE_MB * 1024 * 1024,
        timeout_s=clone_budget.seconds_left(job),  # what earlier attempts left of the deadline
        allow_private_hosts=settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS,
        allow_local_paths=settings.REPO_SEARCH_ALLOW_LOCAL_PATHS,
        token=settings.REPO_SEARCH_GIT_TOKEN,
        token_hosts=settings.REPO_SEARCH_GIT_TOKEN_HOSTS,
    )
    fetching = started
    try:
        with clone_slot(
            ttl_seconds=settings.REPO_SEARCH_CLONE_TIMEOUT_SECS + 120,
            wait_seconds=settings.REPO_SEARCH_CLONE_TIMEOUT_SECS,
        ):
            fetching = time.monotonic()
            check_alive(job_id)
            # Each incremental fetch adds a pack; past the size limit, start from a fresh clone.
            usable = (
                repository.active_generation
                and (target / "HEAD").exists()
                and directory_size(target) < limits.max_bytes
            )
            if usable and repository.branch:
                result = fetch_update(
                    target, repository.url, repository.branch, **limits.as_kwargs()
                )
            else:
                shutil.rmtree(target, ignore_errors=True)
                target.parent.mkdir(parents=True, exist_ok=True)
                result = fetch_branch(
                    repository.url, target, branch=repository.branch or None, **limits.as_kwargs()
                )
    except GitFetchError as error:
        job = clone_budget.charge_failed_attempt(job, fetching)
        if clone_budget.may_retry(error, job, final_attempt):
            jobs.transition(job, JobState.QUEUED, error=f"retrying: {error.message}")
            raise TransientFailure(error.message) from error
        fail_job(job, clone_budget.failure_message(error, job, final_attempt))
        return False
    check_alive(job_id)
    if not repository.branch:
        taken = default_branch_taken(repository, result.branch)
        if taken:  # another copy was added with this branch while this one was queued
            fail_job(job, taken)
            return False
        Repository.objects.filter(pk=repository.pk).update(branch=result.branch)
    Repository.objects.filter(pk=repository.pk).update(size_bytes=directory_size(target))
    IndexJob.objects.filter(pk=job.pk).update(
        commit=result.commit_sha,
        bytes_fetched=result.bytes_received,
        stage_timings=record_timing(job, "cloning", started),
    )
    return True


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
    reader: GitTreeReader, repository: Repository, entries: list, previous: dict[str, str]
) -> set[str] | None:
    """Paths whose blob changed since the live generation, or None to walk everything.

    Unchanged files keep their rows, so the walk only needs to read changed blobs — unless a
    ``.gitignore`` changed, which can change which unchanged files belong in the index.
    """
    if not previous or not repository.last_indexed_commit:
        return None
    try:
        old_entries = reader.list_tree(repository.last_indexed_commit)
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


def run_index(job_id: int, *, task_id: str = "") -> bool:
    """Walk, chunk and store the fetched commit as a new generation, then swap it in."""
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
    generation = repository.active_generation + 1
    task = {"celery_task_id": task_id} if task_id else {}
    job = jobs.transition(job, JobState.WALKING, generation=generation, **task)
    claim = StageClaim.of(job)  # from here on, an earlier run of this stage writes nothing more
    discard_unfinished_generations(repository)
    started = time.monotonic()
    previous: dict[str, str] = {}
    if repository.active_generation:
        previous = dict(
            repository.files.filter(generation=repository.active_generation).values_list(
                "path", "blob_sha"
            )
        )
    with GitTreeReader(repository_dir(repository.pk)) as reader:
        entries = reader.list_tree(job.commit)
        only_paths = _changed_paths(reader, repository, entries, previous)
        walked = walk_tree(
            entries, reader.read_blob,
            max_file_bytes=settings.REPO_SEARCH_MAX_FILE_BYTES, only_paths=only_paths,
        )  # fmt: skip
    failures = [{"path": s.path, "reason": s.reason} for s in walked.errors]
    changed = [f for f in walked.files if previous.get(f.path) != f.sha]
    if only_paths is None:
        carried = [f.path for f in walked.files if previous.get(f.path) == f.sha]
    else:
        current = {entry.path: entry.sha for entry in entries}
        carried = [path for path, sha in previous.items() if current.get(path) == sha]
    job = claim.advance(
        job, JobState.CHUNKING, files_total=len(changed) + len(carried),
        files_skipped=len(walked.skipped), files_done=len(carried),
        skipped_files=[
            {"path": s.path, "reason": s.reason} for s in walked.skipped[:MAX_SKIPPED_LISTED]
        ],
        stage_timings=record_timing(job, "walking", started), failures=failures,
    )  # fmt: skip
    started = time.monotonic()
    to_store: list[FileToStore] = []
    for number, walked_file in enumerate(changed, start=1):
        chunks = _chunks_for(walked_file)
        to_store.append(
            FileToStore(
                path=walked_file.path, blob_sha=walked_file.sha, size_bytes=walked_file.size,
                language=walked_file.language or "", is_test=walked_file.is_test,
                is_doc=walked_file.is_doc, chunks=chunks,
                line_count=walked_file.text.count("\n") + (0 if walked_file.text.endswith("\n") else 1),
            )
        )  # fmt: skip
        if number % HEARTBEAT_EVERY_FILES == 0:
            check_alive(job_id)
            jobs.heartbeat(job_id, files_done=len(carried) + number)
    job = claim.advance(
        job, JobState.STORING, files_done=len(changed) + len(carried),
        chunks_total=sum(len(f.chunks) for f in to_store),
        stage_timings=record_timing(job, "chunking", started),
    )  # fmt: skip
    started = time.monotonic()
    store_files(
        repository.pk, generation, to_store,
        on_batch=lambda _: _still_running(job_id), fence=claim.check,
    )  # fmt: skip
    repository = swap_generation(
        repository.pk, generation, carried, job.commit, before_swap=claim.check
    )
    jobs.heartbeat(job_id)
    try:
        refresh_search_stats(repository.pk)
    except Exception:
        # The new generation is live and searchable already; BM25 counts missing statistics on
        # the fly, so a failed refresh costs speed, not correctness.
        logger.exception("job=%s BM25 statistics refresh failed", job.pk)
    IndexJob.objects.filter(pk=job.pk).update(
        chunks_total=repository.chunk_count,
        stage_timings=record_timing(job, "storing", started),
    )
    logger.info(
        "job=%s repository=%s generation=%s files=%s changed=%s chunks=%s",
        job.pk, repository.pk, generation, repository.file_count, len(changed), repository.chunk_count,
    )  # fmt: skip
    return True
