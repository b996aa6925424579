"""Pages of a hybrid (natural-language) search: the ranked answer cut into pages by a cursor.

A hybrid search ranks the fused top of its lists (``SearchTuning.list_depth`` per list, at most
``MAX_RESULTS`` in all). Every page runs the same search again, as deep as the whole answer
(``fusion_top`` raised, which only lengthens the ranked list: its head is the same), and
leaves out the chunks earlier pages showed. The cursor carries those chunk ids (delta-encoded),
so a page never repeats a hit even when a stage that can vary between runs (expansion, rerank)
moved something; with those off the pages are exactly the one long answer cut in pieces.

``next_cursor`` is URL-safe base64 of ``{"h": seen ids, "q": query fingerprint}``; a cursor of
another query or mode, or one that does not decode, is a 400 like exact search's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from search.exact.cursor import invalid_cursor, pack_cursor, query_fingerprint, unpack_cursor
from search.executor import SearchExecutor, SearchHit, SearchRequest, SearchResult
from search.facets import facet_counts
from search.file_groups import group_by_file, hit_file
from search.match_strength import only_weak_matches

MAX_RESULTS = 200  # hybrid results over all pages


@dataclass
class HybridPage:
    result: SearchResult  # ``hits`` is this page's
    total: int  # results over all pages (those shown before + this page + the rest)
    truncated: bool
    next_cursor: str | None
    seen_before: list[int]  # chunk ids earlier pages showed
    fingerprint: str
    only_weak_matches: bool = False  # no strong match in the answer (search.match_strength)
    # the files of the whole ranked answer per repository and language (search.facets)
    facets: dict[str, Any] = field(default_factory=dict)

    def cursor_after(self, shown: list[int]) -> str:
        """The cursor of the page after this one's first hits, ``shown`` (chunk ids): for a
        caller that showed fewer hits than the page holds (the MCP token budget)."""
        return encode_seen([*self.seen_before, *shown], self.fingerprint)


def hybrid_fingerprint(request: SearchRequest) -> str:
    return query_fingerprint(
        "hybrid",
        request.query,
        sorted(str(r) for r in request.repo_ids or []),
        request.languages,
        request.path_globs,
        request.exclude_path_globs,
        request.exclude_languages,
        request.include_tests,
        request.include_docs,
        request.use_bm25,
        request.use_vector,
        request.use_rerank,
        request.use_expansion,
        request.cross_encoder,
        request.group_by_file,
        # Whose answer it is: another account's cursor is refused like a corrupt one.
        request.viewer.sees_everything,
        sorted(request.viewer.group_ids),
    )


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


def encode_seen(seen: list[int], fingerprint: str) -> str:
    ordered = sorted(set(seen))
    deltas = [b - a for a, b in zip([0, *ordered], ordered, strict=False)]
    body = {"h": ".".join(_base36(d) for d in deltas), "q": fingerprint}
    return pack_cursor(body)


def decode_seen(cursor: str | None, fingerprint: str) -> list[int]:
    if not cursor:
        return []
    bad = invalid_cursor()
    body = unpack_cursor(cursor)
    try:
        text = body["h"]
        if not isinstance(text, str) or not text:
            raise ValueError("no ids")
        ids: list[int] = []
        total = 0
        for part in text.split("."):
            total += int(part, 36)
            ids.append(total)
    except (ValueError, KeyError, TypeError):
        raise bad from None
    if body.get("q") != fingerprint or len(ids) > MAX_RESULTS or total >= 2**63:
        raise bad
    return ids


def run_hybrid_page(
    executor: SearchExecutor, request: SearchRequest, cursor: str | None
) -> HybridPage:
    """One page of ``request`` (``request.limit`` hits) after what ``cursor`` showed."""
    fingerprint = hybrid_fingerprint(request)
    seen = decode_seen(cursor, fingerprint)
    tuning = replace(request.tuning, fusion_top=max(request.tuning.fusion_top, MAX_RESULTS))
    deep = replace(request, limit=MAX_RESULTS, tuning=tuning)
    result = executor.run(deep)
    weak = only_weak_matches(request.query, result.hits)
    heads = [group[0] for group in group_by_file(result.hits, hit_file)]  # a hit per file
    facets = facet_counts(
        ((h.repo_id, h.repo_name, h.language) for h in heads),
        basis="ranked_candidates",
        is_lower_bound=False,
    )
    shown = set(seen)
    rest: list[SearchHit] = [h for h in result.hits if h.chunk_id not in shown]
    if request.group_by_file:
        # ``limit`` files, each with every chunk of it in the answer (best first), file by file
        files = group_by_file(rest, hit_file)
        page = [hit for group in files[: request.limit] for hit in group]
        more = len(files) > request.limit and len(seen) + len(page) < MAX_RESULTS
        total = len(heads)  # files in the whole answer
    else:
        page = rest[: request.limit]
        more = len(rest) > len(page) and len(seen) + len(page) < MAX_RESULTS
        total = len(seen) + len(rest)
    result.hits = page
    return HybridPage(
        result=result,
        total=total,
        truncated=more,
        next_cursor=encode_seen([*seen, *(h.chunk_id for h in page)], fingerprint)
        if more
        else None,
        seen_before=seen,
        fingerprint=fingerprint,
        only_weak_matches=weak,
        facets=facets,
    )
