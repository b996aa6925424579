"""Generations of many branches of one repository, with their content stored once.

Every branch has a live generation: the default branch's is ``Repository.active_generation``,
each other branch's ``IndexedBranch.generation`` (numbers are unique within the repository).
A ``SourceFile`` row (and its chunks, which carry the same ``generation``) is *owned* by exactly
one live generation; other generations that contain the same file (same path, same blob)
reference it through ``SharedFile`` instead of storing it again. So a second branch of a mostly
unchanged tree stores only its changed files, and its vectors are those of the shared chunks.

Invariants kept by every swap and deletion here:

* the default branch owns every row it shows (searches of the default branch keep reading
  ``generation = active_generation`` with no membership join);
* a row's owner is a live generation (or the unfinished one of the run writing it);
* a row is deleted only when no live generation owns or shares it: when its owner retires
  (re-indexed or deleted), a generation that shares it becomes its owner instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from uuid import UUID

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models.expressions import RawSQL
from django.utils import timezone

from indexing.models import IndexedBranch, Repository, RepositoryStatus, SwapPosition
from indexing.services.search_stats import drop_search_stats

logger = logging.getLogger(__name__)


def live_generations(repository_id: UUID) -> list[int]:
    """Every branch's live generation of the repository (the default branch's first)."""
    default = (
        Repository.objects.filter(pk=repository_id).values_list("active_generation", flat=True)
    ).first()
    branches = IndexedBranch.objects.filter(repository_id=repository_id, generation__gt=0)
    found = [default or 0, *branches.values_list("generation", flat=True)]
    return [generation for generation in found if generation > 0]


def next_generation(repository_id: UUID) -> int:
    """The next generation number: above every branch's live one. Rows a crashed run left
    under it are discarded before the new run writes (``discard_unfinished_generations``)."""
    return max(live_generations(repository_id), default=0) + 1


def stored_files(repository_id: UUID) -> set[tuple[str, str]]:
    """(path, blob sha) of every file some live generation holds: a new generation reuses
    these rows instead of chunking and storing the file again."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT path, blob_sha FROM indexing_sourcefile"
            " WHERE repository_id = %s AND generation = ANY(%s)",
            [repository_id, live_generations(repository_id)],
        )
        return {(path, sha) for path, sha in cursor.fetchall()}


_DELETE_NOT_LIVE = (
    "DELETE FROM indexing_sharedfile WHERE repository_id = %s AND NOT generation = ANY(%s)",
    "DELETE FROM indexing_chunkembedding WHERE chunk_id IN (SELECT id FROM indexing_chunk"
    " WHERE repository_id = %s AND NOT generation = ANY(%s))",
    "DELETE FROM indexing_chunk WHERE repository_id = %s AND NOT generation = ANY(%s)",
    "DELETE FROM indexing_sourcefile WHERE repository_id = %s AND NOT generation = ANY(%s)",
)


def discard_unfinished_generations(repository_id: UUID) -> None:
    """Remove rows of generations no branch has live (left by a crashed or cancelled run)."""
    live = live_generations(repository_id)
    with connection.cursor() as cursor:
        for statement in _DELETE_NOT_LIVE:
            cursor.execute(statement, [repository_id, live])


_CHOOSE_ROWS = """
SELECT DISTINCT ON (f.path) f.id, f.generation
FROM unnest(%s::text[], %s::text[]) AS w(path, sha)
JOIN indexing_sourcefile f ON f.repository_id = %s AND f.path = w.path AND f.blob_sha = w.sha
WHERE f.generation = ANY(%s)
ORDER BY f.path, (f.generation = %s) DESC, f.id
"""


def _retire(cursor: CursorWrapper, repository_id: UUID, generation: int) -> None:
    """Rows ``generation`` still owns go to a generation that shares them, else are deleted."""
    cursor.execute(
        "DELETE FROM indexing_sharedfile WHERE repository_id = %s AND generation = %s",
        [repository_id, generation],
    )
    cursor.execute(
        "UPDATE indexing_sourcefile f SET generation = h.generation"
        " FROM (SELECT file_id, min(generation) AS generation FROM indexing_sharedfile"
        "       WHERE repository_id = %s GROUP BY file_id) h"
        " WHERE f.id = h.file_id AND f.repository_id = %s AND f.generation = %s",
        [repository_id, repository_id, generation],
    )
    _sync_chunks(cursor, repository_id)
    cursor.execute(
        "DELETE FROM indexing_sharedfile s USING indexing_sourcefile f"
        " WHERE s.file_id = f.id AND s.generation = f.generation AND s.repository_id = %s",
        [repository_id],
    )
    for statement in _DELETE_NOT_LIVE[1:]:
        cursor.execute(statement.replace("NOT generation = ANY(%s)", "generation = %s"),
                       [repository_id, generation])  # fmt: skip


def _sync_chunks(cursor: CursorWrapper, repository_id: UUID) -> None:
    """Chunks follow their file's owner (searches filter chunks by generation)."""
    cursor.execute(
        "UPDATE indexing_chunk c SET generation = f.generation FROM indexing_sourcefile f"
        " WHERE f.id = c.file_id AND c.repository_id = %s AND c.generation <> f.generation",
        [repository_id],
    )


def swap_branch_generation(
    repository_id: UUID,
    branch_id: int | None,
    new_generation: int,
    reused: Sequence[tuple[str, str]],
    commit_sha: str,
    *,
    before_swap: Callable[[], None] | None = None,
    in_swap: Callable[[UUID, int], None] | None = None,
) -> Repository | IndexedBranch:
    """Make ``new_generation`` the live one of a branch (None: the default) in one transaction.

    ``in_swap(repository_id, new_generation)`` runs inside that transaction once the new
    generation is live in
    it (search statistics are built there, so no search sees the generation without them); it
    fails alone: its savepoint rolls back, it is logged, and the swap still commits.

    ``reused`` are the (path, blob sha) of the new tree that some live generation already
    holds: the rows are referenced (or, for the default branch, taken over, the branch that
    had them sharing them from then on) rather than stored again. What the branch's previous
    generation owned and nobody uses any more is deleted; what another branch still shares
    moves to that branch.
    """
    with transaction.atomic():
        if before_swap is not None:
            before_swap()
        repository = Repository.objects.select_for_update().get(pk=repository_id)
        branch = IndexedBranch.objects.select_for_update().get(pk=branch_id) if branch_id else None
        old = branch.generation if branch is not None else repository.active_generation
        live = live_generations(repository_id)
        with connection.cursor() as cursor:
            chosen: list[tuple[int, int]] = []
            if reused:
                paths, shas = zip(*reused, strict=True)
                cursor.execute(
                    _CHOOSE_ROWS, [list(paths), list(shas), repository_id, live, old or -1]
                )
                chosen = [(int(fid), int(gen)) for fid, gen in cursor.fetchall()]
            own = [fid for fid, gen in chosen if gen == old]
            foreign = [(fid, gen) for fid, gen in chosen if gen != old]
            if old:
                cursor.execute(
                    "DELETE FROM indexing_sharedfile WHERE repository_id = %s AND generation = %s",
                    [repository_id, old],
                )
            moved = own + [fid for fid, _ in foreign] if branch is None else own
            if moved:
                cursor.execute(
                    "UPDATE indexing_sourcefile SET generation = %s WHERE id = ANY(%s)",
                    [new_generation, moved],
                )
            # The default branch takes foreign rows over (their owner shares them from now
            # on); another branch shares them.
            memberships = (
                [(gen, fid) for fid, gen in foreign]
                if branch is None
                else [(new_generation, fid) for fid, _ in foreign]
            )
            if memberships:
                cursor.executemany(
                    "INSERT INTO indexing_sharedfile (repository_id, generation, file_id)"
                    " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    [(repository_id, gen, fid) for gen, fid in memberships],
                )
            if old:
                _retire(cursor, repository_id, old)
            else:
                _sync_chunks(cursor, repository_id)
        counts = generation_counts(repository_id, new_generation)
        now = timezone.now()
        if branch is None:
            repository.active_generation = new_generation
            repository.file_count, repository.chunk_count = counts["files"], counts["chunks"]
            repository.indexed_bytes = counts["bytes"]
            repository.last_indexed_commit, repository.last_indexed_at = commit_sha, now
            repository.status, repository.error = RepositoryStatus.READY, ""
            repository.save()
        else:
            branch.generation = new_generation
            branch.file_count, branch.chunk_count = counts["files"], counts["chunks"]
            branch.shared_file_count = counts["shared_files"]
            branch.last_indexed_commit, branch.last_indexed_at = commit_sha, now
            branch.error = ""
            branch.save()
        if in_swap is not None:
            _run_in_savepoint(in_swap, repository_id, new_generation)
        # Unknown until the swap has committed (a replica then serves the repository only once
        # it has replayed everything the primary wrote before the search): then recorded.
        SwapPosition.objects.update_or_create(repository_id=repository_id, defaults={"lsn": None})
        transaction.on_commit(lambda: record_swap_position(repository_id))
        return repository if branch is None else branch


def record_swap_position(repository_id: UUID) -> None:
    """Record the primary's WAL position after a swap of the repository committed: a replica
    that has replayed past it shows the swapped generation (search.retrieval.replicas)."""
    SwapPosition.objects.filter(repository_id=repository_id).update(
        lsn=RawSQL("(pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint", ())
    )


def _run_in_savepoint(
    step: Callable[[UUID, int], None], repository_id: UUID, generation: int
) -> None:
    try:
        with transaction.atomic():
            step(repository_id, generation)
    except Exception:
        logger.exception("repository=%s: a step of the generation swap failed", repository_id)


def generation_counts(repository_id: UUID, generation: int) -> dict[str, int]:
    """Files, chunks and bytes a generation shows (owned and shared), and how many shared."""
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH files AS ("
            "  SELECT f.id, f.size_bytes, false AS shared FROM indexing_sourcefile f"
            "  WHERE f.repository_id = %s AND f.generation = %s"
            "  UNION ALL"
            "  SELECT f.id, f.size_bytes, true FROM indexing_sharedfile s"
            "  JOIN indexing_sourcefile f ON f.id = s.file_id"
            "  WHERE s.repository_id = %s AND s.generation = %s)"
            " SELECT count(*), coalesce(sum(size_bytes), 0), count(*) FILTER (WHERE shared),"
            "  (SELECT count(*) FROM indexing_chunk c WHERE c.file_id IN (SELECT id FROM files))"
            " FROM files",
            [repository_id, generation, repository_id, generation],
        )
        files, size, shared, chunks = cursor.fetchone()
    return {"files": files, "bytes": int(size), "shared_files": shared, "chunks": chunks}


def drop_branch_rows(branch: IndexedBranch) -> None:
    """Retire a deleted branch's generation: rows another branch uses stay (and move to it)."""
    with transaction.atomic(), connection.cursor() as cursor:
        Repository.objects.select_for_update().filter(pk=branch.repository_id).first()
        generation = (
            IndexedBranch.objects.filter(pk=branch.pk).values_list("generation", flat=True).first()
        )
        if generation:
            IndexedBranch.objects.filter(pk=branch.pk).update(generation=0)
            _retire(cursor, branch.repository_id, generation)
            drop_search_stats(cursor, branch.repository_id, generation)
