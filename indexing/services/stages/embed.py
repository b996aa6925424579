"""The embed stage of an index run: contextual summaries (opt-in), then vectors for every chunk
of the live generation that lacks one in the current embedding space."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from indexing.models import IndexJob, JobKind, JobState, Repository
from indexing.services import jobs
from indexing.services.stages.run_context import (
    JobCancelled,
    TransientFailure,
    check_alive,
    fail_job,
    load_run,
    record_timing,
)

logger = logging.getLogger(__name__)
DATABASE_ERRORS = (OperationalError, InterfaceError)


def _write_summaries(job: IndexJob, repository: Repository) -> list[dict[str, str]]:
    """Contextual retrieval: summarise the chunks that have no summary yet; return failures."""
    from indexing.services.summaries import chunks_needing_summary, summarise_chunks
    from llm import get_chat

    chat = get_chat()
    total = chunks_needing_summary(repository).count()
    IndexJob.objects.filter(pk=job.pk).update(summaries_total=total)
    if total == 0:
        return []
    if not chat.available:
        return [
            {
                "stage": "summaries",
                "reason": "no chat model configured; chunks embedded without summaries",
            }
        ]
    outcome = summarise_chunks(
        repository, chat, on_progress=lambda done: jobs.heartbeat(job.pk, summaries_done=done)
    )
    jobs.heartbeat(job.pk, summaries_done=outcome.written)
    if not outcome.failed:
        return []
    reason = f"{outcome.failed} of {total} chunks got no summary"
    if outcome.error:
        reason += f" ({outcome.error})"
    return [{"stage": "summaries", "reason": reason}]


class SliceUsedUp(Exception):
    """The embed stage used its time slice (``REPO_SEARCH_EMBED_SLICE_SECS``) with chunks left:
    its task is sent again, behind the other repositories' embedding."""


def is_transient_model_error(error: Exception) -> bool:
    """Worth retrying: the model server is down, slow or overloaded — not a bad configuration."""
    transient = getattr(error, "transient", None)
    if transient is not None:
        return bool(transient)
    try:
        from llm import ModelUnavailable
    except ImportError:
        return False
    return isinstance(error, ModelUnavailable)


def run_embed(job_id: int, *, final_attempt: bool = True, task_id: str = "") -> None:
    """Embed the live generation's missing vectors; end the job.

    Best-effort: when the model fails, the job ends ``completed_with_errors`` saying how many
    chunks have no vector yet, and the repository stays ready for full-text search.
    """
    from indexing.services.branches import match_branch_globs, queue_next_branch
    from indexing.services.vectors import (
        EmbedOutcome,
        count_embedded,
        count_embedded_generation,
        embed_repository,
        space_for,
    )

    context = load_run(job_id)
    if context is None:
        return
    job, repository = context.job, context.repository
    if job.state == JobState.STORING or (
        job.state == JobState.QUEUED and job.kind == JobKind.REEMBED
    ):
        job = jobs.transition(
            job, JobState.EMBEDDING, **({"celery_task_id": task_id} if task_id else {})
        )
    elif job.state != JobState.EMBEDDING:
        fail_job(job, f"embed stage reached in state {job.state}")
        return
    elif task_id and job.celery_task_id != task_id:  # resumed: the reaper revokes this task now
        IndexJob.objects.filter(pk=job.pk).update(celery_task_id=task_id)
    started = time.monotonic()
    IndexJob.objects.filter(pk=job.pk).update(slice_started_at=timezone.now())
    before, reused_before = job.chunks_embedded, job.chunks_reused  # earlier slices of the run

    def progress(so_far: EmbedOutcome) -> None:
        check_alive(job_id)
        jobs.heartbeat(
            job_id,
            chunks_embedded=before + so_far.reused + so_far.embedded,
            chunks_reused=reused_before + so_far.reused,
        )

    space = None
    failures = list(job.failures)
    if repository.contextual_summaries:
        failures.extend(_write_summaries(job, repository))
    try:
        from llm import get_embedder

        embedder = get_embedder()
        space = space_for(embedder)
        outcome = embed_repository(
            repository,
            space,
            embedder.embed,
            batch_size=settings.LLM_EMBED_BATCH_SIZE,
            on_progress=progress,
            max_vectors=settings.REPO_SEARCH_MAX_VECTOR_ENTRIES,
            deadline=started + settings.REPO_SEARCH_EMBED_SLICE_SECS,
        )
        if outcome.unfinished:  # its slice is used up: the task queues itself behind the others
            timings = record_timing(job, "embedding", started)
            IndexJob.objects.filter(pk=job.pk).update(stage_timings=timings, slice_started_at=None)
            raise SliceUsedUp(f"{before + outcome.reused + outcome.embedded} chunks embedded")
        if outcome.missing:
            failures.append(
                {
                    "stage": "embedding",
                    "reason": f"the vector limit is reached (REPO_SEARCH_MAX_VECTOR_ENTRIES="
                    f"{settings.REPO_SEARCH_MAX_VECTOR_ENTRIES}); {outcome.missing} chunks have"
                    " no vector and are found by full-text search only",
                }
            )

    except (JobCancelled, SliceUsedUp, *DATABASE_ERRORS):
        raise  # a database outage is the task's to retry, not a model failure to report
    except Exception as error:
        logger.warning("job=%s embedding failed: %s", job_id, error)
        if is_transient_model_error(error) and not final_attempt:
            jobs.heartbeat(job_id)
            raise TransientFailure(str(error)) from error
        failures.append({"stage": "embedding", "reason": str(error)[:500]})
    embedded = count_embedded(repository, space) if space is not None else 0
    Repository.objects.filter(pk=repository.pk).update(embedded_count=embedded)
    missing = repository.chunk_count - embedded
    if job.branch is not None:  # another branch: its own chunks (owned and shared) count
        embedded = count_embedded_generation(repository, space, job.branch.generation)
        missing = job.branch.chunk_count - embedded
    if missing > 0 and not any(f.get("stage") == "embedding" for f in failures):
        failures.append({"stage": "embedding", "reason": f"{missing} chunks have no vector"})
    final = JobState.COMPLETED_WITH_ERRORS if failures else JobState.DONE
    try:
        jobs.transition(
            job, final, chunks_embedded=embedded, failures=failures, slice_started_at=None,
            stage_timings=record_timing(job, "embedding", started),
        )  # fmt: skip
    except jobs.IllegalTransition as error:  # it ended meanwhile (reaped, cancelled): keep that
        raise JobCancelled(str(error)) from error
    if job.branch_id is None:  # the default branch's clone is there: match the globs again
        match_branch_globs(repository.pk)
    queue_next_branch(repository.pk)
    release_model_when_idle()


# Jobs in these states embed now or will soon: the model stays loaded for them.
EMBED_SOON = (JobState.QUEUED, JobState.CLONING, JobState.WALKING, JobState.CHUNKING,
              JobState.STORING, JobState.EMBEDDING)  # fmt: skip


def release_model_when_idle() -> None:
    """After a job's embedding ended: when no other job is on its way to the embed stage, free
    the built-in model's memory (about 250 MB in an idle worker); the next job loads it again."""
    if IndexJob.objects.filter(state__in=EMBED_SOON).exists():
        return
    from llm import release_local_models

    if release_local_models():
        logger.info("nothing left to embed: the embedding model's memory is freed")
