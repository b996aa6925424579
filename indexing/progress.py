"""How far an index job is, how long it has left, and why a waiting job waits: read from job rows.

One place for what the API (``IndexJobSerializer``) and so the UI show about a running job:

- ``fraction``: 0..1 across the stages, for a progress bar.
- ``estimate``: seconds left in the current stage and in the whole job. A stage's rate is what it
  has measured so far (units done / seconds in the stage) blended with the rate recent full jobs
  on this server measured for that stage, which counts as ``PRIOR_WEIGHT_SECS`` seconds of
  observation; later stages use those recent rates. So the estimate moves smoothly from the
  server's history to the job's own pace, and a stage change does not make it jump. Embedding
  is timed by the slices it worked (a restart or a wait behind other repositories does not slow
  the pace) and divided by the jobs embedding at once, which share the embed worker. Before any
  job has finished, the rates of ``DEFAULT_RATES`` (measured by ``bench/index_benchmark.py``)
  stand in. Nothing is known before the walk has counted the files: no estimate then.
  Incremental runs are estimated as if every file's chunks were embedded again, so they err long.
- ``waiting``: for a job that waits for a queue or a clone slot, how many jobs are ahead and why.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from indexing.models import FINISHED_JOB_STATES, IndexJob, JobKind, JobState

# Units per second, measured on 2 cores with the local MiniLM model (README, "Indexing figures").
DEFAULT_RATES: dict[str, float] = {
    "chunking": 1150.0,  # files
    "storing": 2200.0,  # chunks
    "embedding": 23.7,  # chunks
}
DEFAULT_CHUNKS_PER_FILE = 9.0  # Django 5.2: 8.8, click 8.1: 9.6
PRIOR_WEIGHT_SECS = 10.0
HISTORY_JOBS = 20
STAGES = ("queued", "cloning", "walking", "chunking", "storing", "embedding")
# Where each of STAGES starts on the bar (0..1); the last one ends at 1.0.
STAGE_ENDS = (0.0, 0.05, 0.15, 0.2, 0.45, 0.55, 1.0)


@dataclass(frozen=True)
class Rates:
    """Units per second per stage, and chunks per file, from recent full jobs (or the defaults);
    and how many jobs embed now (they share the embed worker's time slice by slice)."""

    per_second: dict[str, float]
    chunks_per_file: float
    embedding_now: int = 0

    def embed_share(self, job: IndexJob) -> float:
        """The part of the embed worker's time ``job`` gets: jobs embedding now, this one
        counted once, over the embed worker's processes."""
        jobs = self.embedding_now + (0 if job.state == JobState.EMBEDDING else 1)
        return min(1.0, settings.REPO_SEARCH_EMBED_CONCURRENCY / max(jobs, 1))


@dataclass(frozen=True)
class Estimate:
    stage_seconds: float | None  # left in the current stage
    total_seconds: float | None  # left in the whole job (None while a stage's work is unknown)


@dataclass(frozen=True)
class Waiting:
    queue: str  # "git", "index", "embed" or "clone slot"
    jobs_ahead: int
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "jobs_ahead": self.jobs_ahead, "reason": self.reason}


def fraction(job: IndexJob) -> float:
    """A 0..1 estimate across stages, for progress bars."""
    if job.is_finished:
        return 1.0
    stage = STAGES.index(job.state) if job.state in STAGES else 0
    within = 0.0
    if job.state == JobState.CHUNKING and job.files_total:
        within = job.files_done / job.files_total
    elif job.state == JobState.EMBEDDING and job.chunks_total:
        within = min(job.chunks_embedded / job.chunks_total, 1.0)
    start, end = STAGE_ENDS[stage], STAGE_ENDS[stage + 1]
    return round(start + (end - start) * within, 3)


def recent_rates(limit: int = HISTORY_JOBS) -> Rates:
    """Median rates of the last ``limit`` full jobs that finished cleanly, stage by stage."""
    rows = (
        IndexJob.objects.filter(kind=JobKind.FULL, state=JobState.DONE)
        .order_by("-finished_at")
        .values("files_total", "chunks_total", "chunks_embedded", "chunks_reused", "stage_timings")[
            :limit
        ]
    )
    samples: dict[str, list[float]] = {stage: [] for stage in DEFAULT_RATES}
    per_file: list[float] = []
    for row in rows:
        timings = row["stage_timings"] or {}
        units = {
            "chunking": row["files_total"],
            "storing": row["chunks_total"],
            "embedding": row["chunks_embedded"] - row["chunks_reused"],
        }
        for stage, done in units.items():
            seconds = float(timings.get(stage) or 0.0)
            if done and seconds >= 0.05:  # shorter stages measure the clock, not the work
                samples[stage].append(done / seconds)
        if row["files_total"] and row["chunks_total"]:
            per_file.append(row["chunks_total"] / row["files_total"])
    return Rates(
        per_second={
            stage: statistics.median(found) if found else DEFAULT_RATES[stage]
            for stage, found in samples.items()
        },
        chunks_per_file=statistics.median(per_file) if per_file else DEFAULT_CHUNKS_PER_FILE,
        embedding_now=IndexJob.objects.filter(state=JobState.EMBEDDING).count(),
    )


def _blended_rate(prior: float, done: int, elapsed: float) -> float:
    """The stage's own pace so far, with the prior counting as ``PRIOR_WEIGHT_SECS`` seconds."""
    return (done + prior * PRIOR_WEIGHT_SECS) / (max(elapsed, 0.0) + PRIOR_WEIGHT_SECS)


def _embedding_worked(job: IndexJob, now: datetime) -> float:
    """Seconds the embed stage has worked: its finished slices, and the running one. Time spent
    waiting behind other repositories' slices, or while no worker ran, does not count."""
    worked = float((job.stage_timings or {}).get("embedding") or 0.0)
    if job.slice_started_at is not None:
        worked += max((now - job.slice_started_at).total_seconds(), 0.0)
    return worked


def _stage_elapsed(job: IndexJob, now: datetime) -> float:
    began = job.stage_started_at or job.started_at or job.created_at
    return (now - began).total_seconds() if began else 0.0


def estimate(job: IndexJob, rates: Rates, now: datetime | None = None) -> Estimate:
    """Seconds left in the current stage and in the job; None where the work is not known yet."""
    if job.is_finished:
        return Estimate(None, None)
    now = now or timezone.now()
    elapsed = _stage_elapsed(job, now)
    per_second = rates.per_second
    timings = job.stage_timings or {}
    # Embedding shares the embed worker with the other repositories embedding now.
    embed_rate = per_second["embedding"] * rates.embed_share(job)
    if job.state == JobState.CHUNKING:
        remaining = max(job.files_total - job.files_done, 0)
        stage = remaining / _blended_rate(per_second["chunking"], job.files_done, elapsed)
        files = job.files_total if job.kind == JobKind.FULL else remaining
        chunks = files * rates.chunks_per_file
        later = chunks / per_second["storing"] + chunks / embed_rate
        return Estimate(stage, stage + later)
    if job.state == JobState.STORING:
        embedding = job.chunks_total / embed_rate
        if "storing" in timings:  # stored; the embed stage has not started yet
            return Estimate(0.0, embedding)
        stage = max(job.chunks_total / per_second["storing"] - elapsed, 0.0)
        return Estimate(stage, stage + embedding)
    if job.state == JobState.EMBEDDING:
        if job.summaries_total > job.summaries_done:
            return Estimate(None, None)  # contextual summaries: the chat model's pace is unknown
        remaining = max(job.chunks_total - job.chunks_embedded, 0)
        # The pace of its own slices (restarts and waits excluded), then its share of the time.
        computed = job.chunks_embedded - job.chunks_reused  # reused vectors cost no model time
        pace = _blended_rate(per_second["embedding"], computed, _embedding_worked(job, now))
        stage = remaining / (pace * rates.embed_share(job))
        return Estimate(stage, stage)
    return Estimate(None, None)  # queued, cloning, walking: how much work is not known yet


def _jobs(count: int) -> str:
    return f"{count} job{'s' if count != 1 else ''}"


@dataclass(frozen=True)
class QueuedRow:
    """What ``waiting`` needs of one unfinished job."""

    pk: int
    state: str
    kind: str
    created_at: datetime
    stage_started_at: datetime | None
    done: frozenset[str]  # stages with a timing: finished, waiting for the next task

    @classmethod
    def of(cls, job: IndexJob) -> QueuedRow:
        return cls(job.pk, job.state, job.kind, job.created_at, job.stage_started_at,
                   frozenset(job.stage_timings or {}))  # fmt: skip

    # Where the job is; a stage's timing is written when it ends, before the next task starts.
    @property
    def queued_for_git(self) -> bool:
        return self.state == JobState.QUEUED and self.kind != JobKind.REEMBED

    @property
    def fetching(self) -> bool:
        return self.state == JobState.CLONING and "cloning" not in self.done

    @property
    def waiting_for_index(self) -> bool:
        return self.state == JobState.CLONING and "cloning" in self.done

    @property
    def indexing(self) -> bool:
        return self.state in (JobState.WALKING, JobState.CHUNKING) or (
            self.state == JobState.STORING and "storing" not in self.done
        )

    @property
    def waiting_for_embed(self) -> bool:
        if self.state == JobState.QUEUED:
            return self.kind == JobKind.REEMBED
        return self.state == JobState.STORING and "storing" in self.done

    @property
    def embedding(self) -> bool:
        return self.state == JobState.EMBEDDING

    def before(self, other: QueuedRow) -> bool:
        """Created (and so queued) before ``other``."""
        return (self.created_at, self.pk) < (other.created_at, other.pk)


def unfinished_jobs() -> list[QueuedRow]:
    """Every job not finished yet, in one query (what ``waiting`` compares a job with)."""
    rows = IndexJob.objects.exclude(state__in=FINISHED_JOB_STATES).only(
        "pk", "state", "kind", "created_at", "stage_started_at", "stage_timings"
    )
    return [QueuedRow.of(job) for job in rows]


def _in_queue(row: QueuedRow, others: list[QueuedRow], queue: str) -> Waiting:
    """Jobs ahead in the index or embed queue: the ones working there, and those queued first."""
    if queue == "embed":
        busy = sum(1 for other in others if other.embedding)
        queued = sum(1 for other in others if other.waiting_for_embed and other.before(row))
        doing = "embedding"
    else:
        busy = sum(1 for other in others if other.indexing)
        queued = sum(1 for other in others if other.waiting_for_index and other.before(row))
        doing = "indexing"
    ahead = busy + queued
    if not ahead:
        return Waiting(queue, 0, f"waiting for a worker on the {queue} queue")
    now = f" ({busy} {doing} now)" if busy else ""
    return Waiting(queue, ahead, f"waiting: {_jobs(ahead)} ahead in the {queue} queue{now}")


def _for_git(job: IndexJob, row: QueuedRow, others: list[QueuedRow]) -> Waiting:
    queued_ahead = sum(1 for other in others if other.queued_for_git and other.before(row))
    fetching = sum(1 for other in others if other.fetching)
    slots = settings.REPO_SEARCH_MAX_CONCURRENT_CLONES
    ahead = queued_ahead + fetching
    if job.error.startswith("retrying:"):
        return Waiting("git", ahead, f"waiting to retry the fetch ({job.error[9:].strip()})")
    if fetching >= slots:
        behind = f"; {_jobs(queued_ahead)} ahead" if queued_ahead else ""
        reason = f"waiting for a clone slot: {fetching} of {slots} fetches running{behind}"
        return Waiting("clone slot", ahead, reason)
    if ahead:
        return Waiting("git", ahead, f"waiting: {_jobs(ahead)} ahead in the git queue")
    return Waiting("git", 0, "waiting for a worker on the git queue")


def _for_clone_slot(row: QueuedRow, others: list[QueuedRow]) -> Waiting | None:
    """A fetching job whose task waits in ``clone_slot()``: more fetches began before it than
    there are slots (the earliest ones hold them)."""
    began = row.stage_started_at or row.created_at
    slots = settings.REPO_SEARCH_MAX_CONCURRENT_CLONES
    earlier = sum(
        1
        for other in others
        if other.fetching and (other.stage_started_at or other.created_at) < began
    )
    if earlier < slots:
        return None
    reason = f"waiting for a clone slot: {slots} of {slots} fetches running"
    return Waiting("clone slot", earlier - slots + 1, reason)


def waiting(job: IndexJob, unfinished: list[QueuedRow] | None = None) -> Waiting | None:
    """Why a job that is not working waits, and how many jobs are ahead of it; else None.

    ``unfinished`` (from ``unfinished_jobs``) lets a list of jobs share one query."""
    if job.is_finished:
        return None
    row = QueuedRow.of(job)
    if not (row.queued_for_git or row.waiting_for_embed or row.state == JobState.CLONING):
        return None  # working
    rows = unfinished if unfinished is not None else unfinished_jobs()
    others = [other for other in rows if other.pk != job.pk]
    if row.queued_for_git:
        return _for_git(job, row, others)
    if row.waiting_for_embed:
        return _in_queue(row, others, "embed")
    if row.waiting_for_index:
        return _in_queue(row, others, "index")
    return _for_clone_slot(row, others)
