"""Drift between the database and the data directory: find it, and repair it when asked.

``manage.py doctor [--repair]`` and a periodic task call ``examine``. What it looks for:

* ``orphan_clone``: a clone directory under ``<data>/repos/`` with no repository row (a
  delete that could not remove it, a restore of an older database) — repair: remove it;
* ``fetch_leftover``: a fetch's staging directory (``<id>.fetch-<random>``) or its lock file
  that no live fetch holds (``flock``) — a fetch killed mid-way, whose repository may have been
  deleted since, so no later fetch of it removes them — repair: remove them. One whose lock a
  live fetch holds is never touched, nor one younger than ``STAGING_GRACE`` (a fetch takes its
  lock just after creating the file);
* ``missing_clone``: an indexed repository whose clone is gone (search still answers from the
  rows, but the file view and incremental updates need the clone) — repair: queue a re-index,
  which clones afresh;
* ``stale_generation``: rows of generations other than the live one, with no job running for
  the repository (a run that stopped between its store and its swap) — repair: delete them
  (their vectors first);
* ``orphan_vectors``: vectors no chunk points at any more (the chunks of a deleted repository,
  of a generation left behind) — the vector index still holds them, and a nearest-neighbour
  search spends candidates on them — repair: delete them (the embed stage's own prune).
  Checked only while no job is in flight: a swap frees vectors its embed stage prunes later;
* ``missing_search_stats``: an indexed repository whose live generation has chunks but no
  full-text statistics (term postings, facet counts): an upgrade that dropped lists of an old
  format (``search.0005``), a refresh that failed after a swap — its full text is ranked on the
  fly, slower and over a capped candidate set — repair: rebuild them;
* ``stuck_status``: a repository that says it is indexing with no unfinished job — repair: back
  to ready (it has a live generation) or failed (it never had one);
* ``orphan_job``: an unfinished job silent for ``job_grace`` whose task neither a live worker
  (running, prefetched, scheduled) nor a broker queue holds — repair: resume it (its stage's
  task is sent again), or fail it once it was lost ``MAX_RESUMES`` times. Skipped, and said so,
  when no worker answers.

Repairs never touch a repository with a job in flight, except ``orphan_job`` itself and
``fetch_leftover`` (the ``flock`` tells a live fetch's directory from a dead one's).
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from indexing.clone_paths import LOCK_SUFFIX, lock_held, lock_of, staged_for
from indexing.models import (
    FINISHED_JOB_STATES,
    EmbeddingSpace,
    IndexJob,
    Repository,
    RepositoryStatus,
)
from indexing.services.recovery import MAX_RESUMES, TaskCensus, census, resume, silent_jobs

logger = logging.getLogger(__name__)

DEFAULT_JOB_GRACE = timedelta(minutes=2)
STAGING_GRACE = timedelta(minutes=1)


@dataclass
class Finding:
    kind: str
    detail: str
    repository_id: str = ""
    repository: str = ""
    repaired: bool = False
    action: str = ""


@dataclass
class DoctorReport:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"findings": [asdict(f) for f in self.findings], "notes": list(self.notes)}


def clones_root() -> Path:
    return Path(settings.REPO_SEARCH_DATA_DIR) / "repos"


def _busy_repositories() -> set[Any]:
    return set(
        IndexJob.objects.exclude(state__in=FINISHED_JOB_STATES).values_list(
            "repository_id", flat=True
        )
    )


def _orphan_clones(report: DoctorReport, repair: bool) -> None:
    root = clones_root()
    if not root.is_dir():
        return
    known = {str(pk) for pk in Repository.objects.values_list("pk", flat=True)}
    for entry in sorted(root.iterdir()):
        try:
            uuid.UUID(entry.name)
        except ValueError:
            continue  # not ours (a clone directory is always named by its repository's id)
        if entry.name in known or not entry.is_dir():
            continue
        finding = Finding("orphan_clone", f"{entry} belongs to no repository")
        if repair:
            shutil.rmtree(entry, ignore_errors=True)
            finding.repaired, finding.action = not entry.exists(), "removed the directory"
        report.findings.append(finding)


def _fetch_leftovers(report: DoctorReport, repair: bool) -> None:
    root = clones_root()
    if not root.is_dir():
        return
    names = {str(pk): name for pk, name in Repository.objects.values_list("pk", "name")}
    young = time.time() - STAGING_GRACE.total_seconds()
    for entry in sorted(root.iterdir()):
        repository_id = staged_for(entry.name)
        if repository_id is None:
            continue
        is_lock = entry.name.endswith(LOCK_SUFFIX)
        lock = entry if is_lock else lock_of(entry)
        if is_lock and entry.with_name(entry.name[: -len(LOCK_SUFFIX)]).exists():
            continue  # judged with its staging directory
        try:
            stamps = [path.stat().st_mtime for path in (entry, lock) if path.exists()]
        except OSError:
            continue  # gone meanwhile (its fetch ended)
        if not stamps or max(stamps) > young:
            continue  # gone (removed with its directory), or a fetch just taking its lock
        if lock.exists() and lock_held(lock):
            continue  # a live fetch's, even if its repository is gone: it removes its own
        whose = "" if repository_id in names else " (its repository is gone)"
        what = "lock file" if is_lock else "staging directory"
        finding = Finding(
            "fetch_leftover",
            f"{entry} is the {what} of a fetch that died{whose}",
            repository_id,
            names.get(repository_id, ""),
        )
        if repair:
            if not is_lock:
                shutil.rmtree(entry, ignore_errors=True)
            lock.unlink(missing_ok=True)
            finding.repaired = not entry.exists() and not lock.exists()
            finding.action = f"removed the {what}" + ("" if is_lock else " and its lock")
        report.findings.append(finding)


def _missing_clones(
    report: DoctorReport, repair: bool, busy: set[Any], requeue: Callable[[Repository], None]
) -> None:
    root = clones_root()
    for repository in Repository.objects.filter(active_generation__gt=0).order_by("name"):
        if (root / str(repository.pk) / "HEAD").exists():
            continue
        finding = Finding(
            "missing_clone",
            "indexed, but its clone is gone (file view and incremental updates need it)",
            str(repository.pk),
            repository.name,
        )
        if repair and repository.pk not in busy:
            requeue(repository)
            finding.repaired, finding.action = True, "queued a re-index (a fresh clone)"
        report.findings.append(finding)


def _stale_generations(report: DoctorReport, repair: bool, busy: set[Any]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.repository_id, count(*) FROM indexing_chunk c"
            " JOIN indexing_repository r ON r.id = c.repository_id"
            " WHERE c.generation <> r.active_generation AND NOT EXISTS (SELECT 1 FROM"
            " indexing_indexedbranch b WHERE b.repository_id = c.repository_id"
            " AND b.generation = c.generation) GROUP BY c.repository_id"
            " UNION ALL"
            " SELECT f.repository_id, 0 FROM indexing_sourcefile f"
            " JOIN indexing_repository r ON r.id = f.repository_id"
            " WHERE f.generation <> r.active_generation AND NOT EXISTS (SELECT 1 FROM"
            " indexing_indexedbranch b WHERE b.repository_id = f.repository_id"
            " AND b.generation = f.generation) GROUP BY f.repository_id"
        )
        counts: dict[Any, int] = {}
        for repository_id, chunks in cursor.fetchall():
            counts[repository_id] = counts.get(repository_id, 0) + chunks
    names = dict(Repository.objects.filter(pk__in=counts).values_list("pk", "name"))
    for repository_id, chunks in sorted(counts.items(), key=lambda item: names[item[0]]):
        if repository_id in busy:
            continue  # a running job writes its next generation: that is not drift
        finding = Finding(
            "stale_generation",
            f"{chunks} chunks (and their files) of generations that are not live",
            str(repository_id),
            names[repository_id],
        )
        if repair:
            _delete_other_generations(repository_id)
            finding.repaired, finding.action = True, "deleted the rows and their vectors"
        report.findings.append(finding)


def _delete_other_generations(repository_id: Any) -> None:
    """Delete rows of generations no branch has live (every branch's live rows stay)."""
    from indexing.services.branch_generations import discard_unfinished_generations

    with transaction.atomic():
        locked = Repository.objects.select_for_update().filter(pk=repository_id).first()
        if locked is not None:
            discard_unfinished_generations(repository_id)


def _orphan_vectors(report: DoctorReport, repair: bool, busy: set[Any]) -> None:
    if busy:
        report.notes.append(
            f"vectors no chunk uses were not checked: {len(busy)} repositories have a job in"
            " flight (their embed stage prunes them)"
        )
        return
    from indexing.services.vectors import prune_orphan_vectors

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT v.space_id, count(*) FROM indexing_embeddingvector v WHERE NOT EXISTS"
            " (SELECT 1 FROM indexing_chunkembedding e WHERE e.embedding_vector_id = v.id)"
            " GROUP BY v.space_id ORDER BY v.space_id"
        )
        counts = dict(cursor.fetchall())
    for space in EmbeddingSpace.objects.filter(pk__in=counts).order_by("pk"):
        finding = Finding(
            "orphan_vectors",
            f"{counts[space.pk]} vectors of {space.key} that no chunk points at (deleted chunks)",
        )
        if repair:
            pruned = prune_orphan_vectors(space)
            finding.repaired, finding.action = True, f"deleted {pruned} vectors"
        report.findings.append(finding)


def _missing_search_stats(report: DoctorReport, repair: bool, busy: set[Any]) -> None:
    from indexing.services.search_stats import refresh_search_stats

    with connection.cursor() as cursor:
        # Every branch's live generation (the default's, then the others', which a migration
        # may have left without statistics) that shows chunks and has none.
        cursor.execute(
            "SELECT DISTINCT g.id FROM ("
            "  SELECT r.id, r.active_generation AS generation FROM indexing_repository r"
            "  WHERE r.active_generation > 0 AND EXISTS (SELECT 1 FROM indexing_chunk c"
            "    WHERE c.repository_id = r.id AND c.generation = r.active_generation)"
            "  UNION ALL"
            "  SELECT b.repository_id, b.generation FROM indexing_indexedbranch b"
            "  WHERE b.generation > 0 AND b.chunk_count > 0) g"
            " WHERE NOT EXISTS (SELECT 1 FROM search_chunkfacetstat s"
            "   WHERE s.repository_id = g.id AND s.generation = g.generation)"
        )
        missing = [row[0] for row in cursor.fetchall()]
    for repository in Repository.objects.filter(pk__in=missing).order_by("name"):
        if repository.pk in busy:
            continue  # its job's swap refreshes them
        finding = Finding(
            "missing_search_stats",
            "a live generation (of its default branch or another) has no full-text statistics"
            " (ranked by the capped fallback, slower)",
            str(repository.pk),
            repository.name,
        )
        if repair:
            refresh_search_stats(repository.pk)
            finding.repaired, finding.action = True, "rebuilt the term postings and counts"
        report.findings.append(finding)


def _stuck_statuses(report: DoctorReport, repair: bool, busy: set[Any]) -> None:
    stuck = Repository.objects.filter(status=RepositoryStatus.INDEXING).exclude(pk__in=busy)
    for repository in stuck.order_by("name"):
        finding = Finding(
            "stuck_status",
            "says it is indexing, but no job is",
            str(repository.pk),
            repository.name,
        )
        if repair:
            if repository.active_generation:
                repository.status = RepositoryStatus.READY
            else:
                repository.status = RepositoryStatus.FAILED
                repository.error = "indexing stopped without finishing; re-index to try again"
            repository.save(update_fields=["status", "error", "updated_at"])
            finding.repaired, finding.action = True, f"status set to {repository.status}"
        report.findings.append(finding)


def _orphan_jobs(
    report: DoctorReport,
    repair: bool,
    job_grace: timedelta,
    take_census: Callable[[], TaskCensus | None],
) -> None:
    candidates = silent_jobs(job_grace)
    if not candidates:
        return
    tasks = take_census()
    if tasks is None:
        report.notes.append("no worker answered; jobs were not checked against live tasks")
        return
    from indexing.services.jobs import reap_stale_jobs

    for job in candidates:
        if tasks.holds(job.pk):
            continue
        finding = Finding(
            "orphan_job",
            f"job {job.pk} is {job.state} but no worker or queue holds its task",
            str(job.repository_id),
            job.repository.name,
        )
        if repair and job.resumes < MAX_RESUMES:
            task = resume(job)
            finding.repaired, finding.action = True, f"resumed ({task} sent again)"
        elif repair:
            reap_stale_jobs(timedelta(0), only=[job.pk], message="its task was lost too often")
            finding.repaired, finding.action = True, "failed the job (lost too often)"
        report.findings.append(finding)


def _queue_reindex(repository: Repository) -> None:
    from indexing.services.repositories import reindex_repository

    reindex_repository(repository)


def examine(
    *,
    repair: bool = False,
    job_grace: timedelta = DEFAULT_JOB_GRACE,
    take_census: Callable[[], TaskCensus | None] = census,
    requeue: Callable[[Repository], None] = _queue_reindex,
) -> DoctorReport:
    """Find drift (and repair it with ``repair``); the report lists what was found and done."""
    report = DoctorReport()
    busy = _busy_repositories()
    _orphan_jobs(report, repair, job_grace, take_census)
    busy = _busy_repositories()  # failed orphan jobs no longer keep their repository busy
    _orphan_clones(report, repair)
    _fetch_leftovers(report, repair)
    _missing_clones(report, repair, busy, requeue)
    _stale_generations(report, repair, busy)
    _orphan_vectors(report, repair, busy)  # after the generations: their vectors are freed
    _missing_search_stats(report, repair, busy)
    _stuck_statuses(report, repair, busy)
    for finding in report.findings:
        logger.warning(
            "doctor: %s repository=%s %s%s",
            finding.kind,
            finding.repository or "-",
            finding.detail,
            f" -> {finding.action}" if finding.repaired else "",
        )
    return report
