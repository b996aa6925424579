"""The response document of a search, for every mode, built once for the API and MCP alike.

Hybrid hits are the executor's ``SearchHit`` fields plus ``url`` (the file's permalink at the
hit's commit and lines, ``indexing.permalinks``), ``upstream_url`` and ``semantic`` (found by the vector lists alone: similar, not
containing the words). Exact and regex hits are one per file: the same fields (``content`` /
``start_line`` / ``end_line`` are its first snippet) plus ``match_count``, ``matches``
(``[{"line", "text", "ranges"}]``, ranges ``[start, end)`` in characters) and ``snippets``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from indexing.models import IndexedBranch, Repository
from indexing.permalinks import Permalinks
from indexing.upstream_urls import upstream_file_url
from search.exact.engine import FileHit
from search.exact.file_names import TIERS
from search.facets import facet_counts
from search.file_groups import document_file, group_by_file
from search.router import SearchOutcome
from search.symbols.hit_names import code_words, hit_names, words_in
from search.types import SearchHit

HIT_FIELDS = dataclasses.fields(SearchHit)
# What a file's further chunks repeat of their hit (the file's own fields are said once).
CHUNK_FIELDS = (
    "chunk_index",
    "content",
    "start_line",
    "end_line",
    "symbol",
    "kind",
    "bm25_score",
    "vector_score",
    "combined_score",
    "rerank_score",
    "semantic",
    "url",
    "upstream_url",
    "names",
)


def _exact_hit(hit: FileHit, links: Permalinks) -> dict[str, Any]:
    file = hit.file
    first_start, first_end, first_text = hit.snippets[0] if hit.snippets else (1, 1, "")
    first_line = hit.matches[0].line if hit.matches else first_start
    matches = [
        {"line": m.line, "text": m.text, "ranges": [list(r) for r in m.ranges]} for m in hit.matches
    ]
    return {
        "repo_id": file.repo_id,
        "repo_name": file.repo_name,
        "file_path": file.path,
        "chunk_index": 0,
        "content": first_text,
        "language": file.language,
        "start_line": first_start,
        "end_line": first_end,
        "symbol": "",
        "kind": "file",
        "commit": file.commit,
        **({"branch": file.branch} if file.branch else {}),
        "is_test": file.is_test,
        "is_doc": file.is_doc,
        "bm25_score": None,
        "vector_score": None,
        "combined_score": 0.0,
        "rerank_score": None,
        "semantic": False,
        "match_count": hit.match_count,
        "matches_offset": hit.match_offset,
        "matches_truncated": hit.matches_truncated,
        "matches": matches,
        "names": hit_names("", matches),
        "snippets": [
            {"start_line": start, "end_line": end, "content": text}
            for start, end, text in hit.snippets
        ],
        "url": links.blob(file.repo_id, file.commit, file.path, first_line, first_line),
        "upstream_url": upstream_file_url(file.repo_url, file.commit, file.path, first_line),
    }


def _hybrid_hits(outcome: SearchOutcome) -> list[dict[str, Any]]:
    assert outcome.hybrid is not None
    hits = outcome.hybrid.hits
    links = Permalinks({(h.repo_id, h.repo_name) for h in hits}, outcome.viewer)
    urls = dict(
        Repository.objects.filter(pk__in={h.repo_id for h in hits}).values_list("pk", "url")
    )
    request = outcome.hybrid_request
    words = code_words(request.query) if request is not None else []
    body = []
    for hit in hits:
        # (its fields as they are: ``asdict`` deep-copies every value, a cost per hit)
        row = {f.name: getattr(hit, f.name) for f in HIT_FIELDS}
        row["branches"] = list(hit.branches)
        row["semantic"] = hit.bm25_score is None and hit.vector_score is not None
        row["names"] = hit_names(hit.symbol, words_in(hit.content, words))
        row["url"] = links.blob(
            hit.repo_id, hit.commit, hit.file_path, hit.start_line, hit.end_line
        )
        row["upstream_url"] = upstream_file_url(
            urls.get(hit.repo_id, ""), hit.commit, hit.file_path, hit.start_line, hit.end_line
        )
        body.append(row)
    if outcome.hybrid_request is not None and outcome.hybrid_request.group_by_file:
        return [
            {**group[0], "chunks": [{k: c[k] for k in CHUNK_FIELDS} for c in group[1:]]}
            for group in group_by_file(body, document_file)
        ]
    return body


def _with_freshness(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``branch`` and ``indexed_at`` of each hit: those of the branch it names (a search with a
    branch filter), else of its repository's default branch (its live generation's)."""
    rows = Repository.objects.filter(pk__in={h["repo_id"] for h in hits}).values_list(
        "pk", "branch", "last_indexed_at"
    )
    fresh = {pk: (branch, at) for pk, branch, at in rows}
    named = {(h["repo_id"], h["branch"]) for h in hits if h.get("branch")}
    others = {(r, b) for r, b in named if fresh.get(r, ("", None))[0] != b}
    at_branch: dict[tuple[Any, str], Any] = {}
    if others:
        branch_rows = IndexedBranch.objects.filter(
            repository_id__in={r for r, _ in others}, name__in={b for _, b in others}
        ).values_list("repository_id", "name", "last_indexed_at")
        at_branch = {(r, b): at for r, b, at in branch_rows}
    for hit in hits:
        default, at = fresh.get(hit["repo_id"], ("", None))
        branch = hit.get("branch") or default
        if branch != default:
            at = at_branch.get((hit["repo_id"], branch))
        hit["branch"], hit["indexed_at"] = branch, at
    return hits


def search_body(outcome: SearchOutcome, limit: int) -> dict[str, Any]:
    """The ``POST /api/search`` document of ``outcome`` (before serialisation)."""
    return {**_mode_body(outcome, limit), "notices": outcome.notices}


def _mode_body(outcome: SearchOutcome, limit: int) -> dict[str, Any]:
    if outcome.hybrid is not None:
        result = outcome.hybrid
        request = outcome.hybrid_request
        assert request is not None
        page = outcome.hybrid_page
        assert page is not None
        hits = _hybrid_hits(outcome)
        return {
            "query": request.query,
            "mode": "hybrid",
            "group_by": "file" if request.group_by_file else "chunk",
            "queries": result.queries,
            "results": hits,
            "total": page.total,
            "total_is_lower_bound": False,
            "only_weak_matches": page.only_weak_matches,
            "facets": page.facets,
            "truncated": page.truncated,
            "next_cursor": page.next_cursor,
            "timed_out": False,
            "exact_matches": outcome.exact_matches,
            "exact_matches_is_lower_bound": outcome.exact_matches_is_lower_bound,
            "total_bm25_hits": result.total_bm25_hits,
            "total_bm25_hits_is_lower_bound": result.bm25_hits_is_lower_bound,
            "total_vector_hits": result.total_vector_hits,
            "total_vector_hits_is_lower_bound": result.vector_hits_is_lower_bound,
            "scope": result.scope,
            "trace": result.trace,
            "ms": result.ms,
            "served_by": result.served_by,
        }
    if outcome.definitions is not None:
        return _symbol_body(outcome)
    if outcome.files is not None:
        return _file_names_body(outcome)
    exact = outcome.exact
    assert exact is not None
    links = Permalinks({(h.file.repo_id, h.file.repo_name) for h in exact.hits}, outcome.viewer)
    return {
        "query": outcome.parsed.text,
        "mode": outcome.mode,
        "queries": [outcome.parsed.text],
        "results": _with_freshness([_exact_hit(h, links) for h in exact.hits]),
        "total": exact.total,
        "total_is_lower_bound": exact.total_is_lower_bound,
        "match_total": exact.match_total,
        "match_total_is_lower_bound": exact.total_is_lower_bound,
        **_exact_facets(outcome),
        "truncated": exact.truncated,
        "next_cursor": exact.next_cursor,
        "timed_out": exact.timed_out,
        "exact_matches": exact.match_total,
        "exact_matches_is_lower_bound": exact.total_is_lower_bound,
        "total_bm25_hits": 0,
        "total_vector_hits": 0,
        "scope": outcome.exact_scope,
        "trace": [
            {
                "name": outcome.mode,
                "status": "ran",
                "reason": "time budget reached" if exact.timed_out else "",
                "ms": exact.ms,
                "detail": {"candidate_files_checked": exact.candidates_checked},
            }
        ],
        "ms": exact.ms,
        "served_by": outcome.served_by,
    }


def _exact_facets(outcome: SearchOutcome) -> dict[str, Any]:
    """``facets`` of an exact or regex answer's first page: every matching file the engine
    found (the count's, so a lower bound exactly when the totals are). Later pages have none:
    the files of earlier pages are not in their count."""
    exact, request = outcome.exact, outcome.exact_request
    if exact is None or (request is not None and request.cursor):
        return {}
    return {
        "facets": facet_counts(
            exact.files, basis="matching_files", is_lower_bound=exact.total_is_lower_bound
        )
    }


def _symbol_body(outcome: SearchOutcome) -> dict[str, Any]:
    found = outcome.definitions or []
    links = Permalinks({(d.repo_id, d.repo_name) for d in found}, outcome.viewer)
    hits = [
        {
            "repo_id": d.repo_id,
            "repo_name": d.repo_name,
            "file_path": d.path,
            "chunk_index": d.chunk_index,
            "content": d.content,
            "language": d.language,
            "start_line": d.start_line,
            "end_line": d.end_line,
            "symbol": d.symbol,
            "kind": d.kind,
            "commit": d.commit,
            **({"branch": d.branch} if d.branch else {}),
            "is_test": d.is_test,
            "is_doc": d.is_doc,
            "bm25_score": None,
            "vector_score": None,
            "combined_score": 0.0,
            "rerank_score": None,
            "semantic": False,
            "symbol_match": d.tier,
            "names": hit_names(d.symbol),
            "url": links.blob(d.repo_id, d.commit, d.path, d.start_line, d.end_line),
            "upstream_url": upstream_file_url(
                d.repo_url, d.commit, d.path, d.start_line, d.end_line
            ),
        }
        for d in found
    ]
    return {
        "query": outcome.parsed.text,
        "mode": "symbol",
        "queries": [outcome.parsed.text],
        "results": _with_freshness(hits),
        "total": outcome.definitions_offset + len(hits),
        "total_is_lower_bound": outcome.definitions_truncated,
        "truncated": outcome.definitions_truncated,
        "next_cursor": outcome.definitions_next_cursor,
        "timed_out": False,
        "exact_matches": None,
        "exact_matches_is_lower_bound": False,
        "total_bm25_hits": 0,
        "total_vector_hits": 0,
        "scope": outcome.exact_scope,
        "trace": [
            {
                "name": "symbol",
                "status": "ran",
                "reason": "",
                "ms": outcome.definitions_ms,
                "detail": {},
            }
        ],
        "ms": outcome.definitions_ms,
        "served_by": outcome.served_by,
    }


def _file_names_body(outcome: SearchOutcome) -> dict[str, Any]:
    """``type:file``: one hit per file, ``path_ranges`` where the words are in its path."""
    result = outcome.files
    assert result is not None
    links = Permalinks({(h.file.repo_id, h.file.repo_name) for h in result.hits}, outcome.viewer)
    hits = [
        {
            "repo_id": h.file.repo_id,
            "repo_name": h.file.repo_name,
            "file_path": h.file.path,
            "chunk_index": 0,
            "content": "",
            "language": h.file.language,
            "start_line": 1,
            "end_line": 1,
            "symbol": "",
            "kind": "file",
            "commit": h.file.commit,
            **({"branch": h.file.branch} if h.file.branch else {}),
            "is_test": h.file.is_test,
            "is_doc": h.file.is_doc,
            "bm25_score": None,
            "vector_score": None,
            "combined_score": 0.0,
            "rerank_score": None,
            "semantic": False,
            "file_match": TIERS[h.tier],
            "path_ranges": [list(r) for r in h.ranges],
            "url": links.blob(h.file.repo_id, h.file.commit, h.file.path, 0, 0),
            "upstream_url": upstream_file_url(h.file.repo_url, h.file.commit, h.file.path),
        }
        for h in result.hits
    ]
    return {
        "query": outcome.parsed.text,
        "mode": "file",
        "queries": [outcome.parsed.text],
        "results": _with_freshness(hits),
        "total": result.total,
        "total_is_lower_bound": False,
        "truncated": result.truncated,
        "next_cursor": result.next_cursor,
        "timed_out": False,
        "exact_matches": None,
        "exact_matches_is_lower_bound": False,
        "total_bm25_hits": 0,
        "total_vector_hits": 0,
        "scope": outcome.exact_scope,
        "trace": [{"name": "file", "status": "ran", "reason": "", "ms": result.ms, "detail": {}}],
        "ms": result.ms,
        "served_by": outcome.served_by,
    }
