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

The body is built here for the API view and the MCP tool alike (``search.exact.response``).

Every mode keeps to the repositories the request's ``viewer`` may see: ``repo:`` patterns are
matched among those only (so a restricted repository's name matches nothing, exactly like a
name that does not exist), requested ids outside them are ``UnknownRepositories``, and the
exact engine, symbol search and the exact-match count are given only visible ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from accounts.visibility import Viewer
from search.exact.candidates import (
    CandidateScope,
    PatternCondition,
    branch_entries,
    narrowing,
    scope_file_count,
)
from search.exact.cursor import MAX_OFFSET, decode_offset, encode_offset, query_fingerprint
from search.exact.engine import ExactRequest, ExactResult, count_budgets, run_exact
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
from search.exact.pattern_logic import AllOf, Expr, TermRef, describe
from search.exact.patterns import LineMatcher, compile_term, regex_required_literals
from search.exact.query_filters import closest_languages, normalize_language
from search.exact.query_language import SearchQuery, Term, parse_search_query
from search.exact.repositories import check_visible, ready_repositories, resolve_repositories
from search.executor import SearchExecutor, SearchRequest, SearchResult
from search.retrieval import parallel
from search.retrieval.globs import InvalidGlob, exact_path_regex, paths_regex
from search.symbols.lookup import DefinitionHit, find_definitions

Mode = Literal["auto", "semantic", "exact", "regex"]
RanMode = Literal["hybrid", "exact", "regex", "symbol", "file"]
MODES = ("auto", "semantic", "exact", "regex")


@dataclass
class SearchCall:
    """One search as a caller asks for it: the query text plus the panel's structured filters."""

    request: SearchRequest  # the hybrid request the caller would have run (query included)
    mode: Mode = "auto"
    cursor: str | None = None
    context_lines: int = 2
    count_exact_matches: bool = True
    executor: SearchExecutor | None = None
    # Exact/regex only: one file (its exact path) and the matching lines of each file to skip,
    # so a file's matches past the first page can be read ("show more matches").
    file_path: str | None = None
    match_offset: int = 0


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
    viewer: Viewer = field(default_factory=Viewer)  # whose links the answer's urls are


def _hybrid(parsed: SearchQuery) -> tuple[RanMode, list[Term]]:
    """A natural-language search for ``parsed``, refusing what it cannot apply: operators
    and ``case:yes`` (it ranks words case-insensitively)."""
    if parsed.expression is not None:
        words = " ".join(f'"{word}"' for word in parsed.words) or '"words"'
        raise QueryRejected(
            "unsupported_combination",
            'OR, NOT, - and parentheses combine "quoted text" and /regex/ terms (an exact'
            " search); a natural-language search cannot apply them"
            + (f" to the words {parsed.free_text!r}" if parsed.words else "")
            + f": quote the words ({words}) or leave the operators out",
            {"words": parsed.words},
        )
    if parsed.case_sensitive:
        example = f'"{parsed.free_text}"' if len(parsed.words) == 1 else '"Client"'
        raise QueryRejected(
            "unsupported_combination",
            "case:yes applies to exact, regex and file-name search; this query runs a"
            " natural-language search, which ignores case: quote the text for an exact,"
            f" case-sensitive search (case:yes {example})",
            {"filter": "case:"},
        )
    return "hybrid", []


def choose_mode(parsed: SearchQuery, mode: Mode) -> tuple[RanMode, list[Term]]:
    """The mode that runs and the patterns an exact/regex search looks for."""
    if mode not in MODES:
        raise QueryRejected("invalid_mode", f"mode must be one of {', '.join(MODES)}")
    free = parsed.free_text
    if mode == "semantic" or parsed.type == "semantic":
        return _hybrid(parsed)
    if mode == "exact":
        terms = parsed.terms + ([Term("literal", free, 0)] if free else [])
        return ("regex" if any(t.kind == "regex" for t in terms) else "exact"), terms
    if mode == "regex":
        terms = parsed.terms + ([Term("regex", free, 0)] if free else [])
        return "regex", terms
    if parsed.type == "file":
        if parsed.has_regex or parsed.symbols or parsed.expression is not None:
            raise QueryRejected(
                "invalid_filter",
                "type:file takes words (pieces of the path), globs (*.py) and quoted text"
                " (no regex, operator or sym:)",
                {"filter": "type:file"},
            )
        return "file", parsed.terms + [Term("literal", w, 0) for w in parsed.words]
    if parsed.type == "symbol" or parsed.symbols:
        names = parsed.symbols or ([parsed.free_text] if parsed.free_text else [])
        if len(names) != 1 or parsed.terms or (parsed.symbols and parsed.words):
            raise QueryRejected(
                "invalid_filter",
                "a symbol search takes one name: sym:NAME (or type:symbol NAME), with filters",
                {"filter": "sym:"},
            )
        if parsed.case_sensitive:
            raise QueryRejected(
                "unsupported_combination",
                "case:yes applies to exact, regex and file-name search; a symbol search finds"
                " names in any case (exact, then prefix, then substring)",
                {"filter": "case:"},
            )
        return "symbol", [Term("literal", names[0], 0)]
    if not parsed.terms:
        return _hybrid(parsed)
    if parsed.words and not parsed.has_regex:
        # A question with a "quoted phrase" in it is still a question: hybrid, where full text
        # requires the phrase (as before the query language); only quotes alone are exact.
        return _hybrid(parsed)
    words = [Term("literal", word, 0) for word in parsed.words]
    terms = parsed.terms + words
    return ("regex" if parsed.has_regex else "exact"), terms


def hybrid_request(parsed: SearchQuery, base: SearchRequest) -> SearchRequest:
    """``base`` untouched for text without syntax; else the free text inside the filters."""
    if not parsed.has_syntax or not parsed.filter_count:
        return base  # no filters: the text as written (quoted phrases stay where they are)
    text = " ".join([parsed.free_text, *(f'"{t.text}"' for t in parsed.terms)]).strip()
    if not text:
        raise QueryRejected(
            "empty_query",
            'nothing to search for: add words, a "quoted literal" or a /regex/ to the filters',
        )
    languages = (base.languages or []) + parsed.languages or None
    globs = (base.path_globs or []) + parsed.files or None
    # branch: on a hybrid search picks the branches searched (search.retrieval.scope).
    return replace(
        base,
        query=text,
        repo_ids=resolve_repositories(parsed, base.repo_ids, base.viewer),
        branches=parsed.branches or base.branches,
        languages=languages,
        path_globs=globs,
        exclude_path_globs=parsed.exclude_files or None,
        exclude_languages=parsed.exclude_languages or None,
    )


def _path_regex(globs: list[str] | None) -> str | None:
    try:
        return paths_regex(globs)
    except InvalidGlob as exc:
        raise QueryRejected("invalid_filter", f"file: {exc}", {"filter": "file:"}) from None


def candidate_scope(parsed: SearchQuery, base: SearchRequest) -> CandidateScope:
    """The repositories, branches, languages and paths an exact, regex, symbol or file-name
    search covers."""
    repo_ids = resolve_repositories(parsed, base.repo_ids, base.viewer)
    if repo_ids is None:
        repo_ids = [pk for pk, _, _ in ready_repositories(base.viewer)]
    branches = None
    patterns = parsed.branches or list(base.branches or [])
    if patterns:
        repo_ids, branches = branch_entries(patterns, repo_ids, base.viewer)
    languages = [lang.lower() for lang in (base.languages or [])] + parsed.languages
    globs = (base.path_globs or []) + parsed.files
    return CandidateScope(
        repo_ids=repo_ids,
        languages=languages or None,
        exclude_languages=parsed.exclude_languages or None,
        path_regex=_path_regex(globs or None),
        exclude_path_regex=_path_regex(parsed.exclude_files or None),
        branches=branches,
    )


def _fingerprint(
    kind: str, terms: list[Term], case: bool, scope: CandidateScope, expression: Expr | None = None
) -> str:
    return query_fingerprint(
        *([kind] if kind != "exact" else []),  # exact cursors stay as they were
        *([describe(expression)] if expression is not None else []),
        [(t.kind, t.text) for t in terms],
        case,
        sorted(str(r) for r in scope.repo_ids),
        scope.languages,
        scope.exclude_languages,
        scope.path_regex,
        scope.exclude_path_regex,
        # (only with a branch filter: cursors of the default branches stay as they were)
        *([[(str(b.repo_id), b.generation) for b in scope.branches]] if scope.branches else []),
    )


def _in_file(scope: CandidateScope, path: str) -> CandidateScope:
    """``scope`` narrowed to the file at ``path`` (still within its globs)."""
    try:
        exact = exact_path_regex(path)
    except InvalidGlob as exc:
        raise QueryRejected("invalid_filter", f"file_path: {exc}", {"field": "file_path"}) from None
    # (?=...) is a lookahead: the path must match the globs and be the file.
    regex = f"(?=(?:{scope.path_regex})){exact}" if scope.path_regex else exact
    return replace(scope, path_regex=regex)


def exact_request(parsed: SearchQuery, terms: list[Term], call: SearchCall) -> ExactRequest:
    base = call.request
    case = bool(parsed.case_sensitive)
    matchers: list[LineMatcher] = [compile_term(t, case) for t in terms]
    conditions = [
        PatternCondition([t.text], case)
        if t.kind == "literal"
        else PatternCondition(regex_required_literals(t.text))
        for t in terms
    ]
    expression = parsed.expression
    if expression is not None:
        # The free words an exact or regex search adds after the query's terms: required too.
        added = tuple(TermRef(i) for i in range(len(parsed.terms), len(terms)))
        expression = AllOf((expression, *added)) if added else expression
        conditions = narrowing(expression, conditions)
    scope = candidate_scope(parsed, base)
    if call.file_path:
        scope = _in_file(scope, call.file_path)
    fingerprint = _fingerprint("exact", terms, case, scope, expression)
    request = ExactRequest(
        matchers=matchers,
        conditions=conditions,
        scope=scope,
        fingerprint=fingerprint,
        limit=base.limit,
        cursor=call.cursor,
        context_lines=call.context_lines,
        expression=expression,
        match_offset=call.match_offset,
    )
    request.budget_ms, request.count_budget_ms, request.count_max_files = count_budgets(
        scope_file_count(scope), request.budget_ms
    )
    return request


def run_search(call: SearchCall) -> SearchOutcome:
    """Parse, choose the mode, run. Raises ``QueryRejected`` (and the hybrid executor's
    ``UnknownRepositories`` / ``InvalidGlob``) for bad input."""
    from search.retrieval.query import identifier_query

    parsed = parse_search_query(call.request.query)
    ran, terms = choose_mode(parsed, call.mode)
    if (call.file_path or call.match_offset) and ran not in ("exact", "regex"):
        raise QueryRejected(
            "unsupported_combination",
            f"file_path and match_offset page the matching lines of an exact or regex search;"
            f" this query runs a {ran} search",
            {"mode": ran},
        )
    if call.request.languages:
        call = replace(call, request=replace(call.request, languages=_languages(call.request)))
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
            counted = parallel.soon(
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
        fingerprint = _fingerprint("symbol", terms, False, scope)
        offset = decode_offset(call.cursor, fingerprint)
        # Pages by position: the lookup's order is fixed (tier, then name, path, line).
        found, more = find_definitions(terms[0].text, scope, limit=offset + call.request.limit)
        definitions = found[offset:]
        end = offset + len(definitions)
        outcome = SearchOutcome(
            "symbol",
            parsed,
            definitions=definitions,
            definitions_truncated=more,
            definitions_offset=offset,
            definitions_fingerprint=fingerprint,
            viewer=call.request.viewer,
        )
        if more and definitions and end < MAX_OFFSET:
            outcome.definitions_next_cursor = encode_offset(end, fingerprint)
        outcome.exact_scope = {**_scope_doc_for(scope), "path_globs": None}
        return outcome
    if ran == "file":
        return _file_search(parsed, terms, call)
    exact = exact_request(parsed, terms, call)
    return SearchOutcome(
        ran,
        parsed,
        exact=run_exact(exact),
        exact_request=exact,
        exact_scope=_scope_doc(exact),
        viewer=call.request.viewer,
    )


def _languages(request: SearchRequest) -> list[str]:
    """The request's ``languages`` field as language ids (``Python``, ``py`` -> ``python``); an
    unknown one is refused with the nearest, as ``lang:`` is."""
    known: list[str] = []
    for value in request.languages or []:
        language = normalize_language(value)
        if language is None:
            nearest = closest_languages(value)
            hint = f" — did you mean {nearest[0]}?" if nearest else ""
            raise QueryRejected(
                "unknown_language",
                f"unknown language {value!r} in languages{hint}",
                {
                    "field": "languages",
                    "value": value,
                    "suggestions": nearest,
                    **({"suggestion": nearest[0]} if nearest else {}),
                },
            )
        known.append(language)
    return known


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
        fingerprint=_fingerprint("file", terms, case, scope),
        limit=call.request.limit,
        cursor=call.cursor,
    )
    outcome = SearchOutcome(
        "file", parsed, files=run_file_names(request), viewer=call.request.viewer
    )
    outcome.exact_scope = _scope_doc_for(scope)
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
