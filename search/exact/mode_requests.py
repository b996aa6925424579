"""What a caller asks for (``SearchCall``: the query and the panel's filters) and what its parsed
query becomes: the mode that runs it (``choose_mode``) and the request of that
mode -- the hybrid executor's (``hybrid_request``), the exact engine's (``exact_request``) and
the candidate files both search within (``candidate_scope``). ``search.router.run_search``
runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from search.exact.candidates import (
    CandidateScope,
    PatternCondition,
    branch_entries,
    narrowing,
    scope_file_count,
)
from search.exact.cursor import query_fingerprint
from search.exact.engine import ExactRequest, count_budgets
from search.exact.errors import QueryRejected
from search.exact.pattern_logic import AllOf, Expr, Term, TermRef, describe
from search.exact.patterns import LineMatcher, compile_term, regex_required_literals
from search.exact.query_language import SearchQuery
from search.exact.repositories import ready_repositories, resolve_repositories
from search.executor import SearchExecutor, SearchRequest
from search.retrieval.query import InvalidGlob, exact_path_regex, paths_regex

MODES = ("auto", "semantic", "exact", "regex")
Mode = Literal["auto", "semantic", "exact", "regex"]
RanMode = Literal["hybrid", "exact", "regex", "symbol", "file"]


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
    # Whose costly searches this one counts among (``search.fair_use.caller_of``; None: no limit).
    caller: str | None = None


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


def scope_fingerprint(
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
    fingerprint = scope_fingerprint("exact", terms, case, scope, expression)
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
