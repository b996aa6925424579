"""Freshness of the branches indexed beside the default one: polling and push webhooks.

A poll of a repository with more branches reads the remote's branch tips in one ref
advertisement (``indexing.git.remote_refs.remote_heads``); each indexed branch whose tip moved
is re-indexed (``indexing.services.branches.reindex_branch``: now, or after the running job).
Globs are matched again at each poll, so a ``release/*`` branch created upstream is indexed and
one deleted upstream stops being indexed; a branch named as such that is deleted upstream keeps
its index and says so (``error``), as the default branch does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.db.models import QuerySet

from indexing.models import IndexedBranch, IndexJob, JobState, Repository
from indexing.services.branches import (
    branches_matching,
    delete_branch,
    queue_next_branch,
    reindex_branch,
)


@dataclass(frozen=True)
class BranchOutcome:
    branch: str
    remote_tip: str = ""
    moved: bool = False  # the remote's tip differs from the branch's indexed commit
    job_id: int | None = None  # its job, or the running job it waits for
    queued: bool = False  # a job of its own was queued now
    reason: str = ""


def no_reindex_reason(
    previous_tip: str, tip: str, indexed_commit: str, jobs: QuerySet[IndexJob]
) -> tuple[bool, str] | None:
    """Why a noted remote tip queues no re-index, as ``(moved, reason)``; None when it should.

    Shared by the default branch (``polling.note_remote_tip``) and the other indexed branches:
    nothing to do when the indexed commit is the tip; a re-index of this same tip that failed is
    not queued again at every check (its error is on the job) -- a new tip or the Re-index
    button tries again.
    """
    if tip == indexed_commit:
        return False, "the indexed commit is the remote's tip"
    latest = jobs.order_by("-created_at").first()
    if latest is not None and latest.state == JobState.FAILED and previous_tip == tip:
        return True, f"the last re-index of this tip failed: {latest.error}"
    return None


def note_branch_tip(
    repository: Repository, branch: IndexedBranch, tip: str, *, source: str
) -> BranchOutcome:
    """Record ``tip`` as the branch's remote tip; re-index the branch when it moved."""
    previous = branch.remote_tip
    IndexedBranch.objects.filter(pk=branch.pk).update(remote_tip=tip)
    skipped = no_reindex_reason(previous, tip, branch.last_indexed_commit, branch.jobs.all())
    if skipped is not None:
        moved, reason = skipped
        return BranchOutcome(branch.name, tip, moved=moved, reason=reason)
    job, created = reindex_branch(repository, branch)
    reason = (
        f"an incremental re-index of {branch.name!r} was queued ({source})"
        if created
        else f"{branch.name!r} is re-indexed after the running job ({source})"
    )
    return BranchOutcome(
        branch.name, tip, moved=True, job_id=job.pk if job else None, queued=created, reason=reason
    )


def poll_branches(repository: Repository, heads: Mapping[str, str]) -> list[BranchOutcome]:
    """Match the globs again against ``heads`` (branch -> tip) and check every indexed branch."""
    kept, _left_out = branches_matching(repository.branch_specs, sorted(heads), repository.branch)
    existing = {b.name: b for b in repository.indexed_branches.all()}
    for name in kept:
        if name not in existing:
            IndexedBranch.objects.create(repository=repository, name=name, pending=True)
    for name, branch in existing.items():
        if name not in kept:  # a glob's match deleted upstream (or past the cap now)
            delete_branch(branch)
    outcomes = []
    for branch in repository.indexed_branches.filter(generation__gt=0):
        tip = heads.get(branch.name)
        if tip is None:
            IndexedBranch.objects.filter(pk=branch.pk).update(
                remote_tip="",
                error=f"branch {branch.name!r} no longer exists on the remote; the index of "
                f"{branch.last_indexed_commit[:12]} is kept",
            )
            outcomes.append(BranchOutcome(branch.name, reason="deleted upstream"))
            continue
        outcomes.append(note_branch_tip(repository, branch, tip, source="poll"))
    queue_next_branch(repository.pk)  # branches a glob matched for the first time
    return outcomes
