"""The statements ``search.exact.reader`` runs (only placeholders and fixed SQL are formatted in).

``{scope}`` is ``CandidateScope.sql()`` (chunks or files ``c``), ``{live}`` keeps ready
repositories ``r`` in scope, ``{branches}`` is ``BRANCHES_SQL`` (the chosen branches ``e``).
"""

from __future__ import annotations

LIVE_REPOS = "r.status = 'ready' AND r.id = ANY(%s)"

# Files in key order after a position: each repository's live files by its unique
# (repository, generation, path) index, at most ``limit`` of each, merged by name.
WALK_SQL = """
    SELECT c.id AS file_id, r.id AS repo_id, r.name, r.url, r.last_indexed_commit, c.path,
           c.language, c.is_test, c.is_doc
    FROM indexing_repository r
    CROSS JOIN LATERAL (
        SELECT c.id, c.path, c.language, c.is_test, c.is_doc
        FROM indexing_sourcefile c
        WHERE c.repository_id = r.id AND c.generation = r.active_generation AND {scope}
          AND c.path >= (CASE WHEN r.name = %s THEN %s ELSE '' END)
          AND (r.name, c.path, c.id) > (%s, %s, %s)
        ORDER BY c.path
        LIMIT %s
    ) c
    WHERE {live} AND r.name >= %s
    ORDER BY r.name, c.path, c.id
    LIMIT %s
"""

# The same walk over the branches a branch filter chose (``e``, one repository's branch a row,
# in (repository name, branch name) order): each branch's own files by the same index, and
# those it references (``SharedFile``) by its (repository, generation) index.
BRANCH_FILES_SQL = """
            (SELECT c.id, c.path, c.language, c.is_test, c.is_doc
             FROM {source}
             WHERE {owner} = r.id AND {generation} = e.generation AND {scope}
               AND c.path >= (CASE WHEN e.sort_name = %s THEN %s ELSE '' END)
               AND (e.sort_name, c.path, c.id) > (%s, %s, %s)
             ORDER BY c.path LIMIT %s)
"""
BRANCH_WALK_SQL = """
    SELECT c.id AS file_id, r.id AS repo_id, r.name, r.url, e.at_commit, c.path,
           c.language, c.is_test, c.is_doc, e.branch, e.sort_name
    FROM {branches}
    JOIN indexing_repository r ON r.id = e.repo_id
    CROSS JOIN LATERAL (
        SELECT u.* FROM ({own} UNION ALL {shared}) u ORDER BY u.path, u.id LIMIT %s
    ) c
    WHERE r.status = 'ready' AND e.sort_name >= %s
    ORDER BY e.sort_name, c.path, c.id
    LIMIT %s
"""

# A window of files with a flag each: do its chunks hold every condition's literals? (A lateral
# per condition, so each file's own chunks are read by the file index, never a hashed subplan
# over every chunk holding the literal.)
WINDOW_SQL = """
    WITH w AS MATERIALIZED ({walk})
    SELECT w.*, {matched} FROM w {checks} ORDER BY w.name, w.path, w.file_id
"""

# The listed read: matching chunks from the trigram index (lazily: the outer LIMIT stops the
# heap rechecks), those in scope, grouped by file; and how many chunks there were (at most
# PROBE_CHUNKS + 1).
PROBE_SQL = """
    WITH g AS MATERIALIZED (
        SELECT c.id, c.file_id, c.repository_id, c.generation, c.language, c.path, c.is_test,
               c.is_doc {flags}
        FROM indexing_chunk c WHERE {any_pattern}
    ), hits AS MATERIALIZED (
        SELECT c.* FROM g c
        JOIN indexing_repository r ON r.id = c.repository_id AND c.generation = r.active_generation
        WHERE {live} AND {scope} {after}
        LIMIT %s
    )
    SELECT n.chunks, f.* FROM (SELECT count(*) AS chunks FROM hits) n LEFT JOIN (
        SELECT c.file_id, r.id AS repo_id, r.name, r.url, r.last_indexed_commit, c.path,
               min(c.language), bool_or(c.is_test), bool_or(c.is_doc)
        FROM hits c JOIN indexing_repository r ON r.id = c.repository_id
        GROUP BY c.file_id, r.id, r.name, r.url, r.last_indexed_commit, c.path
        {having}
    ) f ON TRUE
    ORDER BY f.name, f.path, f.file_id
"""

# The listed read over the branches a branch filter chose: a chunk is in a branch when its
# generation is the branch's or the branch references its file (``SharedFile``); a chunk two
# branches hold counts once for each.
BRANCH_PROBE_SQL = """
    WITH g AS MATERIALIZED (
        SELECT c.id, c.file_id, c.repository_id, c.generation, c.language, c.path, c.is_test,
               c.is_doc {flags}
        FROM indexing_chunk c WHERE {any_pattern}
    ), hits AS MATERIALIZED (
        SELECT c.*, e.branch, e.at_commit, e.sort_name FROM g c
        JOIN {branches} ON e.repo_id = c.repository_id AND (c.generation = e.generation
            OR EXISTS (SELECT 1 FROM indexing_sharedfile s WHERE s.file_id = c.file_id
                       AND s.repository_id = e.repo_id AND s.generation = e.generation))
        JOIN indexing_repository r ON r.id = c.repository_id
        WHERE r.status = 'ready' AND {scope} {after}
        LIMIT %s
    )
    SELECT n.chunks, f.* FROM (SELECT count(*) AS chunks FROM hits) n LEFT JOIN (
        SELECT c.file_id, r.id AS repo_id, r.name, r.url, c.at_commit, c.path,
               min(c.language), bool_or(c.is_test), bool_or(c.is_doc), c.branch, c.sort_name
        FROM hits c JOIN indexing_repository r ON r.id = c.repository_id
        GROUP BY c.file_id, r.id, r.name, r.url, c.at_commit, c.path, c.branch, c.sort_name
        {having}
    ) f ON TRUE
    ORDER BY f.sort_name, f.path, f.file_id
"""

# The listed read of a few repositories (ids in the first parameter), each on its own: its live
# chunks after the position holding a pattern's literals, through the (repository, content)
# trigram index -- the rechecks are of that repository's chunks alone --, at most ``limit`` of
# each; grouped by file, with the most chunks one repository had (above the limit: too many).
REPO_PROBE_SQL = """
    WITH r AS MATERIALIZED (
        SELECT r.id, r.name, r.url, r.last_indexed_commit, r.active_generation
        FROM indexing_repository r WHERE r.status = 'ready' AND r.id = ANY(%s)
    ), hits AS MATERIALIZED (
        SELECT r.id AS repo_id, r.name, r.url, r.last_indexed_commit, c.*
        FROM r CROSS JOIN LATERAL (
            SELECT c.file_id, c.path, c.language, c.is_test, c.is_doc {flags}
            FROM indexing_chunk c
            WHERE c.repository_id = r.id AND c.generation = r.active_generation
              AND {any_pattern} AND {scope} AND (r.name, c.path, c.file_id) > (%s, %s, %s)
            LIMIT %s
        ) c
    )
    SELECT n.most, f.* FROM (
        SELECT coalesce(max(k), 0) AS most FROM (SELECT count(*) AS k FROM hits GROUP BY repo_id) x
    ) n LEFT JOIN (
        SELECT c.file_id, c.repo_id, c.name, c.url, c.last_indexed_commit, c.path,
               min(c.language), bool_or(c.is_test), bool_or(c.is_doc)
        FROM hits c
        GROUP BY c.file_id, c.repo_id, c.name, c.url, c.last_indexed_commit, c.path
        {having}
    ) f ON TRUE
    ORDER BY f.name, f.path, f.file_id
"""
