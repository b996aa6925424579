"""Exact and regex search: candidates from the trigram index, verified line by line, paged by file.

One hit per file, in (repository name, path) order, with every matching line (up to
``max_matches_per_file`` from the ``match_offset``-th; ``match_count`` is the file's true
count, ``FileHit.matches_truncated`` says more follow) and its ranges, and snippets
of ``context_lines`` around them. Several patterns must all match somewhere in a file (as
``git grep --all-match``), or combine as the request's ``expression`` says (``"a" OR "b"``,
``NOT "c"``: ``search.exact.pattern_logic``), and a line is reported when any pattern that
counts for the file (not one under a NOT) matches it.

Totals: after the page is full the engine keeps verifying candidates to count them until
``count_budget_ms`` or ``count_max_files``; when it stops early ``total`` is a lower bound
(``total_is_lower_bound``). The count's budget scales with the work (``count_budgets``): a
scope of up to ``EXACT_COUNT_MAX_FILES`` files is counted to the end (with time in
proportion to its files), so a repository of a few thousand files always has exact totals; a larger one is
counted for 80 ms from the start (leaving room under 100 ms for what is under way then) or
2,000 more files, and its totals are marked as lower bounds. The whole search has ``budget_ms``: when it runs out the answer is
what was found, ``timed_out: true``, and a ``next_cursor`` that continues where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import OperationalError

from search.exact.candidates import CandidateFile, CandidateScope, PatternCondition, file_lines
from search.exact.cursor import PagePosition, decode_cursor, encode_cursor
from search.exact.file_text import FileText
from search.exact.pattern_logic import Expr, evaluate, shown_terms
from search.exact.patterns import LineMatcher, touched_lines
from search.exact.reader import CandidateReader

BATCH_FILES = 100
EXACT_COUNT_MAX_FILES = 5000  # files in scope (at most) whose totals are always counted exactly
EXACT_COUNT_MS_PER_FILE = 2  # the time such a count may take, per file in scope (~0.7 ms each)
QUICK_COUNT_MS = 80
QUICK_COUNT_FILES = 2000
LINES_FILES = 20  # files whose lines are read at once (or what the page lacks), doubling
QUERY_CANCELED = "57014"


@dataclass
class ExactRequest:
    matchers: list[LineMatcher]
    conditions: list[PatternCondition]
    scope: CandidateScope
    fingerprint: str
    limit: int = 10
    cursor: str | None = None
    context_lines: int = 2
    max_matches_per_file: int = 100
    match_offset: int = 0  # matching lines of each file skipped before those kept (paging them)
    budget_ms: int = 4000
    count_budget_ms: int = QUICK_COUNT_MS
    count_max_files: int = QUICK_COUNT_FILES
    clock: Callable[[], float] = time.perf_counter  # seconds; the budgets are measured on it
    expression: Expr | None = None  # how the matchers combine (None: all are required)


def count_budgets(scope_files: int, budget_ms: int) -> tuple[int, int, int]:
    """(``budget_ms``, ``count_budget_ms``, ``count_max_files``) for a scope of ``scope_files``
    files. When they are few enough to read, all of them, with time in proportion to them (at
    least nine tenths of the search's budget; the search's budget grows with it, so the page is
    never cut short by the count); else the quick count (a lower bound)."""
    if scope_files <= EXACT_COUNT_MAX_FILES:
        count_ms = max(QUICK_COUNT_MS, budget_ms * 9 // 10, EXACT_COUNT_MS_PER_FILE * scope_files)
        return (
            max(budget_ms, count_ms + budget_ms // 10),
            count_ms,
            max(scope_files, QUICK_COUNT_FILES),
        )
    return budget_ms, QUICK_COUNT_MS, QUICK_COUNT_FILES


@dataclass
class LineMatch:
    line: int
    text: str
    ranges: list[tuple[int, int]]


@dataclass
class FileHit:
    file: CandidateFile
    match_count: int
    matches: list[LineMatch]
    snippets: list[tuple[int, int, str]]  # (start_line, end_line, text)
    match_offset: int = 0  # matching lines before ``matches[0]`` (a page of the file's lines)

    @property
    def matches_truncated(self) -> bool:
        """More matching lines after those kept (``match_offset`` pages on to them)."""
        return self.match_offset + len(self.matches) < self.match_count


@dataclass
class ExactResult:
    hits: list[FileHit]
    total: int
    total_is_lower_bound: bool
    match_total: int
    truncated: bool
    next_cursor: str | None
    timed_out: bool
    candidates_checked: int
    ms: float
    detail: dict[str, Any] = field(default_factory=dict)
    # (repository id, name, language) of every matching file found from the page's start on,
    # the page's and those counted after it (search.facets); earlier pages' are not in it.
    files: list[tuple[Any, str, str]] = field(default_factory=list)


def match_file(
    lines: dict[int, str],
    matchers: list[LineMatcher],
    *,
    max_matches: int,
    context_lines: int,
    expression: Expr | None = None,
    skip: int = 0,
) -> tuple[int, list[LineMatch], list[tuple[int, int, str]]] | None:
    """(match count, kept matches, snippets) of one file, or None when it does not match.

    Without ``expression`` every pattern must occur in the file; with one, the file matches
    when it holds (``search.exact.pattern_logic``), and its lines are those of the patterns
    not under a NOT. The first ``skip`` matching lines are counted, not kept. Each pattern is searched over the whole file first (``touched_lines``): a
    file a required one misses is dropped after a search each, and only the lines some search
    touched are matched line by line."""
    numbers = sorted(lines)
    text = FileText([lines[number] for number in numbers])
    shown = set(range(len(matchers))) if expression is None else shown_terms(expression)
    touched: set[int] = set()
    for matcher in matchers:
        found_lines = touched_lines(matcher, text)
        if found_lines is None:
            touched = set(range(len(numbers)))
            break
        if not found_lines and expression is None:
            return None  # every pattern must match somewhere in the file
        touched.update(found_lines)
    matched_patterns = [False] * len(matchers)
    count = 0
    kept: list[LineMatch] = []
    for index in sorted(touched):
        number, line = numbers[index], text.lines[index]
        ranges: list[tuple[int, int]] = []
        for pattern, matcher in enumerate(matchers):
            found = matcher.ranges(line)
            if found:
                matched_patterns[pattern] = True
                if pattern in shown:
                    ranges.extend(found)
        if ranges:
            count += 1
            if count > skip and len(kept) < max_matches:
                kept.append(LineMatch(number, line, _merge(ranges)))
    holds = all(matched_patterns) if expression is None else evaluate(expression, matched_patterns)
    if not count or not holds:
        return None
    return count, kept, _snippets(lines, [m.line for m in kept], context_lines)


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] and end > start:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif not merged or (start, end) != merged[-1]:
            merged.append((start, end))
    return merged


def _snippets(
    lines: dict[int, str], numbers: list[int], context: int
) -> list[tuple[int, int, str]]:
    spans: list[list[int]] = []
    last_line = max(lines) if lines else 0
    for number in numbers:
        start, end = max(1, number - context), min(last_line, number + context)
        if spans and start <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return [
        (start, end, "\n".join(lines.get(n, "") for n in range(start, end + 1)))
        for start, end in spans
    ]


def _canceled(exc: OperationalError) -> bool:
    return getattr(getattr(exc, "__cause__", None), "sqlstate", None) == QUERY_CANCELED


def run_exact(request: ExactRequest) -> ExactResult:
    wall_started = time.perf_counter()
    clock = request.clock
    started = clock()
    position = decode_cursor(request.cursor, request.fingerprint)

    def elapsed_ms() -> float:
        return (clock() - started) * 1000

    hits: list[FileHit] = []
    after = position.after
    reader = CandidateReader(request.scope, request.conditions, after=after, clock=clock)
    page_end: PagePosition | None = None  # where the next page starts once this one is full
    extra_files = extra_matches = checked = 0
    found_files: list[tuple[Any, str, str]] = []
    exhausted = timed_out = counting_stopped = False
    while not (exhausted or timed_out or counting_stopped):
        remaining = request.budget_ms - elapsed_ms()
        if remaining <= 0:
            timed_out = True
            break
        if len(hits) >= request.limit and (
            elapsed_ms() > request.count_budget_ms or extra_files >= request.count_max_files
        ):
            counting_stopped = True  # (a batch of windows may have held no candidate)
            break
        try:
            budget = request.count_budget_ms if len(hits) >= request.limit else request.budget_ms
            stop_at = started + budget / 1000
            want = max(0, request.limit - len(hits))
            read = reader.next_batch(BATCH_FILES, max(1, int(remaining)), stop_at, want)
            batch = read.files
        except OperationalError as exc:
            if not _canceled(exc):
                raise
            timed_out = True
            break
        exhausted = read.exhausted
        if read.out_of_time:  # the next probe would have ended past the budget
            after = read.last_examined or after
            if len(hits) >= request.limit:
                counting_stopped = True
            else:
                timed_out = True
            break
        stopped_early = False
        texts: dict[int, dict[int, str]] = {}
        lines_files = LINES_FILES
        for index, candidate in enumerate(batch):
            page_full = len(hits) >= request.limit
            if page_full and (
                elapsed_ms() > request.count_budget_ms or extra_files >= request.count_max_files
            ):
                counting_stopped, exhausted, stopped_early = True, False, True
                break
            if elapsed_ms() > request.budget_ms:
                timed_out, exhausted, stopped_early = True, False, True
                break
            if candidate.file_id not in texts:  # the lines of the next few files, as needed
                # the page's lines as it fills (more each time: few may match), then the rest
                wanted = len(batch) if page_full else max(request.limit - len(hits), lines_files)
                lines_files = min(lines_files * 2, BATCH_FILES)
                try:
                    ids = [c.file_id for c in batch[index : index + wanted]]
                    texts = file_lines(ids, max(1, int(request.budget_ms - elapsed_ms())))
                except OperationalError as exc:
                    if not _canceled(exc):
                        raise
                    timed_out, exhausted, stopped_early = True, False, True
                    break
            checked += 1
            after = candidate.key
            found = match_file(
                texts[candidate.file_id],
                request.matchers,
                max_matches=request.max_matches_per_file,
                context_lines=request.context_lines,
                expression=request.expression,
                skip=request.match_offset,
            )
            if found is None:
                continue
            count, kept, snippets = found
            found_files.append((candidate.repo_id, candidate.repo_name, candidate.language))
            if page_full:
                extra_files += 1
                extra_matches += count
                continue
            hits.append(FileHit(candidate, count, kept, snippets, request.match_offset))
            if len(hits) == request.limit:
                page_end = PagePosition(
                    after=candidate.key,
                    files_before=position.files_before + len(hits),
                    matches_before=position.matches_before + sum(h.match_count for h in hits),
                )
        if not stopped_early and read.last_examined is not None:
            after = read.last_examined  # files the reader passed over did not match
    if page_end is None and (timed_out or counting_stopped) and after is not None:
        # Stopped before the page filled: continue from the last file looked at.
        page_end = PagePosition(
            after=after,
            files_before=position.files_before + len(hits),
            matches_before=position.matches_before + sum(h.match_count for h in hits),
        )
    more = page_end is not None and (extra_files > 0 or not exhausted)
    page_matches = sum(h.match_count for h in hits)
    return ExactResult(
        hits=hits,
        total=position.files_before + len(hits) + extra_files,
        total_is_lower_bound=not exhausted,
        match_total=position.matches_before + page_matches + extra_matches,
        truncated=more,
        next_cursor=encode_cursor(page_end, request.fingerprint) if more and page_end else None,
        timed_out=timed_out,
        candidates_checked=checked,
        ms=round((time.perf_counter() - wall_started) * 1000, 1),
        files=found_files,
    )
