"""Which search runs for a query, and the one response document every caller gets.

``run_search`` parses the query language once and runs:

* **hybrid** (``SearchExecutor``) for text without syntax -- the request is exactly the one the
  API built before the query language existed, so natural-language questions rank as they did --
  and for filters plus words (``repo:httpx timeout``: the words, inside the filters);
* **exact** for ``"quoted literals"`` on their own; a question with a quoted phrase among its
  words stays **hybrid** (full text requires the phrase, as before); **regex** when a
  ``/regex/`` is among the terms (free words beside it are then literals, all required in a file);
* ``mode`` (``auto|semantic|exact|regex``) overrides: ``exact`` / ``regex`` take the free text as
  one literal / pattern, ``semantic`` always runs hybrid.

The body is built here for the API view and the MCP tool alike (``search.response``).

Every mode keeps to the repositories the request's ``viewer`` may see: ``repo:`` patterns are
matched among those only (so a restricted repository's name matches nothing, exactly like a
name that does not exist), requested ids outside them are ``UnknownRepositories``, and the
exact engine, symbol search and the exact-match count are given only visible ids.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from accounts.visibility import Viewer
from search.exact.candidates import (
    CandidateScope,
)
from search.exact.cursor import MAX_OFFSET, decode_offset, encode_offset
from search.exact.engine import ExactRequest, ExactResult, run_exact
from search.exact.errors import QueryRejected
from search.exact.file_names import (
    FileNameRequest,
    FileNameResult,
    refuse_bad_ranges,
    run_file_names,
    split_terms,
)
from search.exact.hybrid_pages import HybridPage, run_hybrid_page
from search.exact.match_count import count_exact_matches
from search.exact.mode_requests import (
    RanMode,
    SearchCall,
    candidate_scope,
    choose_mode,
    exact_request,
    hybrid_request,
    scope_fingerprint,
)
from search.exact.pattern_logic import Term
from search.exact.query_filters import checked_language
from search.exact.query_language import SearchQuery, parse_search_query
from search.exact.repositories import check_visible
from search.executor import SearchExecutor, SearchRequest, SearchResult
from search.fair_use import costly_search_slot
from search.filter_notices import bare_filter_notices, file_name_notices, start_notices
from search.retrieval.db import soon
from search.retrieval.replicas import positions, read_with_fallback
from search.symbols.lookup import DefinitionHit, find_definitions


@dataclass
class SearchOutcome:
    mode: RanMode
    parsed: SearchQuery
    hybrid: SearchResult | None = None
    hybrid_request: SearchRequest | None = None
    hybrid_page: HybridPage | None = None  # totals and cursor of the hybrid page
    exact: ExactResult | None = None
    exact_request: ExactRequest | None = None  # what ran (its cursor and fingerprint)
    exact_scope: dict[str, Any] = field(default_factory=dict)
    exact_matches: int | None = None
    exact_matches_is_lower_bound: bool = False
    definitions: list[DefinitionHit] | None = None
    files: FileNameResult | None = None  # type:file
    definitions_truncated: bool = False
    definitions_offset: int = 0  # definitions earlier pages showed
    definitions_fingerprint: str = ""
    definitions_next_cursor: str | None = None
    definitions_ms: float = 0.0  # the definitions lookup's time
    viewer: Viewer = field(default_factory=Viewer)  # whose links the answer's urls are
    # Where an exact, regex, symbol or file-name search read (hybrid: in ``hybrid``).
    served_by: dict[str, Any] = field(default_factory=dict)
    # What the query asked that the answer could not follow (search.filter_notices): filters
    # that matched no file (exclusions always, the others when it is empty), filter names
    # written with no value, searched as words, and the words of an empty type:file search that
    # no path holds.
    notices: list[dict[str, str]] = field(default_factory=list)


def run_search(call: SearchCall) -> SearchOutcome:
    """Parse, choose the mode, run. Raises ``QueryRejected`` (and the hybrid executor's
    ``UnknownRepositories`` / ``InvalidGlob``) for bad input. A first page carries the
    ``notices`` of the filters that matched no file (exclusions always, the others when it is
    empty), of the filter names written with no value (``file: x``) and, for an empty
    ``type:file`` search, of the words no indexed path holds."""
    if call.request.languages:
        call = replace(call, request=replace(call.request, languages=_languages(call.request)))
    parsed = parse_search_query(call.request.query)
    first_page = not (call.cursor or call.file_path or call.match_offset)
    filtered = parsed.files or parsed.exclude_files or parsed.languages or parsed.exclude_languages
    checked = first_page and (filtered or call.request.path_globs or call.request.languages)
    notices = start_notices(parsed, call.request) if checked else None
    outcome = _run(call, parsed)
    if notices is not None:
        outcome.notices = [*notices(_empty(outcome)), *outcome.notices]
    if first_page and parsed.bare_filters:
        outcome.notices = [*bare_filter_notices(parsed, call.mode), *outcome.notices]
    return outcome


def _empty(outcome: SearchOutcome) -> bool:
    if outcome.hybrid_page is not None:
        return outcome.hybrid_page.total == 0
    if outcome.definitions is not None:
        return not outcome.definitions
    if outcome.files is not None:
        return outcome.files.total == 0
    return outcome.exact is not None and outcome.exact.total == 0 and not outcome.exact.timed_out


def _run(call: SearchCall, parsed: SearchQuery) -> SearchOutcome:
    from search.retrieval.query import identifier_query

    ran, terms = choose_mode(parsed, call.mode)
    if ran == "hybrid" and not (call.request.use_bm25 or call.request.use_vector):
        raise QueryRejected(
            "unsupported_combination",
            "use_bm25 and use_vector are both false: a hybrid search ranks the full-text list,"
            " the vector list or both, so turn one of them on",
            {"fields": ["use_bm25", "use_vector"]},
        )
    if (call.file_path or call.match_offset) and ran not in ("exact", "regex"):
        raise QueryRejected(
            "unsupported_combination",
            f"file_path and match_offset page the matching lines of an exact or regex search;"
            f" this query runs a {ran} search",
            {"mode": ran},
        )
    for glob in [*(call.request.path_globs or []), *parsed.files, *parsed.exclude_files]:
        refuse_bad_ranges(glob)
    # Requested ids the viewer may not see are unknown in every mode, before any filter.
    check_visible(call.request.repo_ids, call.request.viewer)
    if ran == "hybrid":
        request = hybrid_request(parsed, call.request)
        counted = None
        if call.count_exact_matches and identifier_query(request.query) and request.query.isascii():
            # counted while the hybrid search runs, on a connection of its own when it can be
            stripped = request.query.strip().strip("`").removesuffix("()")
            branches = list(request.branches or []) or None
            counted = soon(
                count_exact_matches, stripped, request.repo_ids, request.viewer, branches
            )
        page = run_hybrid_page(call.executor or SearchExecutor(), request, call.cursor)
        outcome = SearchOutcome(
            "hybrid",
            parsed,
            hybrid=page.result,
            hybrid_request=request,
            hybrid_page=page,
            viewer=call.request.viewer,
        )
        if counted is not None:
            outcome.exact_matches, outcome.exact_matches_is_lower_bound = counted()
        return outcome
    if ran == "symbol":
        scope = exact_request(parsed, terms, call).scope
        fingerprint = scope_fingerprint("symbol", terms, False, scope)
        offset = decode_offset(call.cursor, fingerprint)
        # Pages by position: the lookup's order is fixed (tier, then name, path, line).
        started = time.perf_counter()
        (found, more), route = read_with_fallback(
            positions(scope.repo_ids),
            lambda: find_definitions(terms[0].text, scope, limit=offset + call.request.limit),
            lambda _found: False,
        )
        definitions = found[offset:]
        end = offset + len(definitions)
        outcome = SearchOutcome(
            "symbol",
            parsed,
            definitions=definitions,
            definitions_truncated=more,
            definitions_offset=offset,
            definitions_fingerprint=fingerprint,
            definitions_ms=round((time.perf_counter() - started) * 1000, 2),
            viewer=call.request.viewer,
            served_by=route.served_by(),
        )
        if more and definitions and end < MAX_OFFSET:
            outcome.definitions_next_cursor = encode_offset(end, fingerprint)
        outcome.exact_scope = {**_scope_doc_for(scope), "path_globs": None}
        return outcome
    if ran == "file":
        return _file_search(parsed, terms, call)
    exact = exact_request(parsed, terms, call)
    with costly_search_slot(call.caller, exact):  # SearchBusy (429) past the caller's share
        result, route = read_with_fallback(
            positions(exact.scope.repo_ids), lambda: run_exact(exact), lambda _result: False
        )
    return SearchOutcome(
        ran,
        parsed,
        exact=result,
        exact_request=exact,
        exact_scope=_scope_doc(exact),
        viewer=call.request.viewer,
        served_by=route.served_by(),
    )


def _languages(request: SearchRequest) -> list[str]:
    """The request's ``languages`` field as language ids (``Python``, ``py`` -> ``python``); an
    unknown one is refused with the nearest, as ``lang:`` is."""
    return [checked_language(value, "languages") for value in request.languages or []]


def _file_search(parsed: SearchQuery, terms: list[Term], call: SearchCall) -> SearchOutcome:
    scope = candidate_scope(parsed, call.request)
    case = bool(parsed.case_sensitive)
    pieces, globs = split_terms(parsed.words)
    quoted = [t.text for t in parsed.terms]  # quoted text is a piece, even with a "*" in it
    request = FileNameRequest(
        scope=scope,
        words=[*quoted, *pieces],
        globs=globs,
        case_sensitive=case,
        fingerprint=scope_fingerprint("file", terms, case, scope),
        limit=call.request.limit,
        cursor=call.cursor,
    )
    files, route = read_with_fallback(
        positions(scope.repo_ids), lambda: run_file_names(request), lambda _files: False
    )
    outcome = SearchOutcome(
        "file", parsed, files=files, viewer=call.request.viewer, served_by=route.served_by()
    )
    outcome.exact_scope = _scope_doc_for(scope)
    if files.total == 0 and not call.cursor and not globs:  # a misspelt name: the nearest
        words = [*quoted, *pieces]
        outcome.notices = file_name_notices(scope, words, call.request.query, case_sensitive=case)
    return outcome


def _scope_doc(request: ExactRequest) -> dict[str, Any]:
    return _scope_doc_for(request.scope)


def _scope_doc_for(scope: CandidateScope) -> dict[str, Any]:
    return {
        "repo_ids": scope.repo_ids,
        "languages": scope.languages,
        "path_globs": None,
        "include_tests": True,
        "include_docs": True,
        "tests_reason": "exact and regex search cover every indexed file",
        "docs_reason": "exact and regex search cover every indexed file",
    }
