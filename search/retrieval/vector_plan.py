"""What the vector stage needs to know before it searches, in one statement.

The current embedding space (by key), which repositories in scope it serves (those with at least
one vector in it and no re-embed job running), and how many rows the repository / language /
test / doc filters keep among those (``ChunkFacetStat``; a repository without statistics for its
live generation counts in full; path globs cannot be estimated). Three ORM queries, a savepoint
and a facet list loaded row by row before: one round trip now, at any number of repositories.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from indexing.models import FINISHED_JOB_STATES, EmbeddingSpace, JobKind
from search.retrieval.scope import ScopeFilter

_SQL = """
WITH space AS (
    SELECT id, key, provider, model, dim, created_at FROM indexing_embeddingspace WHERE key = %s
), scope AS (
    SELECT * FROM unnest(%s::uuid[], %s::int[], %s::int[])
        WITH ORDINALITY AS g(id, generation, chunks, position)
), served AS (
    SELECT g.* FROM scope g, space s
    -- A scalar subquery, one probe of the (space, repository) B-tree per repository: as EXISTS
    -- the planner made it a semi-join aggregating the whole index (60 ms at 157 k chunks).
    WHERE (SELECT true FROM indexing_chunkembedding e
           WHERE e.space_id = s.id AND e.repository_id = g.id LIMIT 1)
      AND NOT EXISTS (SELECT 1 FROM indexing_indexjob j
                      WHERE j.repository_id = g.id AND j.kind = %s AND NOT (j.state = ANY(%s)))
), facets AS (
    SELECT f.repository_id, coalesce(sum(f.chunks) FILTER (
        WHERE (%s OR NOT f.is_test) AND (%s OR NOT f.is_doc)
          AND (%s OR lower(f.language) = ANY(%s))), 0) AS kept
    FROM search_chunkfacetstat f
    JOIN served g ON f.repository_id = g.id AND f.generation = g.generation
    GROUP BY f.repository_id
)
SELECT s.id, s.key, s.provider, s.model, s.dim, s.created_at,
    coalesce((SELECT array_agg(g.id ORDER BY g.position) FROM served g), '{}'),
    (SELECT coalesce(sum(coalesce(f.kept, g.chunks)), 0)
     FROM served g LEFT JOIN facets f ON f.repository_id = g.id)
FROM space s
"""


@dataclass
class VectorPlan:
    space: EmbeddingSpace | None
    served: list[Any] = field(default_factory=list)  # repository ids, in scope order
    estimated_rows: int = 0


def plan_vector_search(
    space_key: str, scope: ScopeFilter, languages: list[str] | None, tests: bool, docs: bool
) -> VectorPlan:
    """The space of ``space_key`` (None if no vector was ever stored in it), the repositories
    in ``scope`` it serves, and the rows the filters keep among those."""
    repositories = scope.repositories
    with connection.cursor() as cursor:
        cursor.execute(
            _SQL,
            [
                space_key,
                [r.id for r in repositories],
                [r.generation for r in repositories],
                [r.chunks for r in repositories],
                JobKind.REEMBED.value,
                [str(state) for state in FINISHED_JOB_STATES],
                tests,
                docs,
                not languages,
                [language.lower() for language in languages or []],
            ],
        )
        row = cursor.fetchone()
    if row is None:
        return VectorPlan(space=None)
    space = EmbeddingSpace(
        pk=row[0], key=row[1], provider=row[2], model=row[3], dim=row[4], created_at=row[5]
    )
    return VectorPlan(space=space, served=list(row[6]), estimated_rows=int(row[7]))
