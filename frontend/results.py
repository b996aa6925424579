"""Turns a ``POST /api/search`` response into what the results template draws.

The page calls the search API like any other client, then asks the server to render that JSON
(``frontend.views.render_results``) so highlighting stays in Pygments on the server. Everything
here reads the response defensively: a field the API leaves out shows as a dash, not an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from accounts.visibility import Viewer
from frontend.highlighting import Line, highlight_lines, query_terms, snippet_window
from frontend.pipeline import _int, _text
from frontend.stored_chunks import stored_contents
from indexing.permalinks import Permalinks, blob_url
from indexing.upstream_urls import upstream_file_url
from indexing.visible import visible_repositories
from search.symbols.hit_names import MAX_NAMES, hit_names

SNIPPET_MAX_LINES = 14
SNIPPET_MAX_CHARS = 20_000
SNIPPET_SCAN_LINES = 200
MAX_RESULTS = 200
MAX_FILE_SNIPPETS = 5
CHUNKS_PER_CARD = 3  # a hybrid card shows its file's best chunks, then "more from this file"
SCORE_FIELDS = (
    ("bm25_score", "full-text"),
    ("vector_score", "vector"),
    ("combined_score", "combined"),
    ("rerank_score", "rerank"),
)
# Fields only hits that are listed, not ranked, carry (exact/regex, symbol, file name).
UNSCORED_HIT_KEYS = ("match_count", "symbol_match", "file_match")
# The stages ``search.executor`` records; the two retrievals run side by side (one column).


@dataclass
class NameLinks:
    """An identifier on a hit and its go-to-definition and find-references pages."""

    name: str
    definition_url: str
    references_url: str


@dataclass
class ChunkView:
    """One more chunk of a hybrid card's file, below its best one."""

    location: str
    symbol: str
    file_url: str
    lines: list[Line]
    lines_omitted: int
    names: list[NameLinks] = field(default_factory=list)


@dataclass
class ResultView:
    position: int
    repo_id: str
    repo_name: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    language: str
    commit: str
    lines: list[Line]
    lines_omitted: int
    scores: list[tuple[str, str]]
    file_url: str
    upstream_url: str | None
    match_count: int | None = None  # exact/regex hits: matching lines in the file
    semantic: bool = False  # hybrid hits found by the vector lists alone (not the words)
    branch: str = ""  # a branch other than the repository's default one (a branch search)
    # exact/regex: the matching line the next "show more matches" starts at, how many follow,
    # and the last line shown (the next page's context lines before it are not repeated)
    next_match_offset: int = 0
    more_matches: int = 0
    last_line_shown: int = 0
    # hybrid: the file's next best chunks in this answer, and how many more it has here
    also: list[ChunkView] = field(default_factory=list)
    more_in_file: int = 0
    more_in_file_url: str = ""
    names: list[NameLinks] = field(default_factory=list)  # go to definition / find references

    @property
    def location(self) -> str:
        """``path:start-end`` (``path:start`` for one line; ``path`` for a file-name hit)."""
        if self.start_line < 1:
            return self.path
        if self.end_line > self.start_line:
            return f"{self.path}:{self.start_line}-{self.end_line}"
        return f"{self.path}:{self.start_line}"


def format_score(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return "—"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "—"
    return f"{number:.4f}" if abs(number) < 10 else f"{number:.1f}"


def file_view_url(repo_id: str, path: str, start: int, end: int, commit: str = "") -> str:
    """The permalink of ``path`` at ``commit`` (``HEAD``: the indexed one) with the lines
    marked, addressed by id (``build_results`` addresses by name where it can)."""
    return blob_url(repo_id, commit or "HEAD", path, start, end)


def build_results(
    response: Mapping[str, Any], query: str, viewer: Viewer, *, offset: int = 0
) -> list[ResultView]:
    """Result views of a posted response; stored text is read only from repositories ``viewer``
    may see (the response is the browser's, so it may name any repository)."""
    raw_results = response.get("results")
    if not isinstance(raw_results, list):
        return []
    raw_results = [item for item in raw_results[:MAX_RESULTS] if isinstance(item, Mapping)]
    # A grouped hybrid answer (group_by "file", search.file_groups): each result, then the first
    # of its file's other chunks the card shows; the rest are counted ("more from this file").
    items: list[Mapping[str, Any]] = []
    cards: list[tuple[int, int]] = []  # (chunks of the card in ``items``, chunks not shown)
    for result in raw_results:
        chunks = result.get("chunks")
        nested = [c for c in chunks if isinstance(c, Mapping)] if isinstance(chunks, list) else []
        below = [
            {**result, "content": None, "names": None, **chunk, "chunks": None}
            for chunk in nested[: CHUNKS_PER_CARD - 1]
        ]
        items += [result, *below]
        cards.append((1 + len(below), len(nested) - len(below)))
    raw_results = items
    repo_ids = {_text(item.get("repo_id")) for item in raw_results}
    repositories = {
        str(repo.pk): repo
        for repo in visible_repositories(viewer).filter(
            pk__in=[rid for rid in repo_ids if _is_uuid(rid)]
        )
    }
    stored = stored_contents(raw_results, repositories)
    links = Permalinks([(repo.pk, repo.name) for repo in repositories.values()], viewer)
    terms = query_terms(query)
    views: list[ResultView] = []
    for item in raw_results:
        repo_id = _text(item.get("repo_id"))
        repository = repositories.get(repo_id)
        path = _text(item.get("file_path"))
        start = max(_int(item.get("start_line"), 1), 1)
        end = max(_int(item.get("end_line"), start), start)
        commit = _text(item.get("commit")) or (repository.last_indexed_commit if repository else "")
        language = _text(item.get("language"))
        content = item.get("content")
        if content is None:
            content = stored.get((repo_id, path, _int(item.get("chunk_index"), -1)), "")
        snippets = item.get("snippets")
        file_name_hit = "file_match" in item  # a file-name hit: the file itself, no lines
        lines: list[Line]
        if file_name_hit:
            lines, start, end = [], 0, 0
        elif isinstance(snippets, list) and snippets:
            lines = file_match_lines(item, snippets, path=path, language=language)
        else:
            lines = highlight_lines(
                snippet_source(_text(content)),
                path=path,
                language=language,
                first_line=start,
                terms=terms,
            )
        shown, omitted = snippet_window(lines, SNIPPET_MAX_LINES)
        next_offset, more = matches_after(item, shown)
        if more:
            omitted = 0  # "show more matches" goes on instead of "N more lines"
        views.append(
            ResultView(
                position=0,
                repo_id=repo_id,
                repo_name=_text(item.get("repo_name"))
                or (repository.name if repository else repo_id[:8]),
                path=path,
                start_line=start,
                end_line=end,
                symbol=_text(item.get("symbol")),
                language=language,
                commit=commit,
                lines=shown,
                lines_omitted=omitted,
                scores=result_scores(item),
                file_url=links.blob(repository.pk, commit, path, 0 if file_name_hit else start, end)
                if repository
                else "",
                upstream_url=upstream_file_url(repository.url, commit, path, start, end)
                if repository
                else None,
                match_count=_int(item.get("match_count"), 0) if "match_count" in item else None,
                semantic=item.get("semantic") is True,
                next_match_offset=next_offset,
                more_matches=more,
                last_line_shown=shown[-1].number if shown else 0,
                branch=_text(item.get("branch"))
                if repository and _text(item.get("branch")) not in ("", repository.branch)
                else "",
                names=name_links(item, repository.name if repository else "", language),
            )
        )
    return file_cards(views, cards, query, offset)


def file_cards(
    views: list[ResultView], cards: Sequence[tuple[int, int]], query: str, offset: int
) -> list[ResultView]:
    """One card per result: its view, the file's next chunks below it (``cards``: how many
    views each card takes, and how many more chunks its file has in the answer) and past them a
    "more from this file" search (the query inside ``repo:`` and ``file:``)."""
    grouped: list[ResultView] = []
    start = 0
    for position, (size, more) in enumerate(cards, start=offset + 1):
        card, rest = views[start], views[start + 1 : start + size]
        start += size
        card.position = position
        card.also = [
            ChunkView(v.location, v.symbol, v.file_url, v.lines, v.lines_omitted, v.names)
            for v in rest
        ]
        card.more_in_file = more
        if more:
            words = f"{query} repo:{card.repo_name} file:{card.path}"
            card.more_in_file_url = reverse("frontend:search") + "?" + urlencode({"q": words})
        grouped.append(card)
    return grouped


def name_links(item: Mapping[str, Any], repo_name: str, language: str) -> list[NameLinks]:
    """The hit's ``names`` (``search.symbols.hit_names``; worked out again when the posted
    hit lacks them), each with its definition and references pages."""
    from frontend.symbol_views import symbol_links

    raw = item.get("names")
    if isinstance(raw, list):
        names = [n for n in raw if isinstance(n, str) and n][:MAX_NAMES]
    else:
        matches = item.get("matches")
        found = [m for m in matches if isinstance(m, Mapping)] if isinstance(matches, list) else []
        names = hit_names(_text(item.get("symbol")), found)
    return [NameLinks(name, *symbol_links(name, repo_name, language)) for name in names]


def matches_after(item: Mapping[str, Any], shown: Sequence[Line]) -> tuple[int, int]:
    """(offset of the first matching line not shown, matching lines after it) of an exact or
    regex hit whose lines are ``shown``: the snippet window or the API's page of matches (up to
    100 a file) may stop before the file's last matching line. (0, 0) for other hits."""
    raw = item.get("matches")
    count = _int(item.get("match_count"), 0)
    if not isinstance(raw, list) or not count:
        return 0, 0
    last = shown[-1].number if shown else 0
    lines = [_int(m.get("line"), 0) for m in raw if isinstance(m, Mapping)]
    shown_matches = sum(1 for line in lines if line <= last) if shown else len(lines)
    offset = _int(item.get("matches_offset"), 0) + max(shown_matches, 1)
    return offset, max(count - offset, 0)


def result_scores(item: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(method, score) rows of a ranked (hybrid) hit; none for exact, regex, symbol and
    file-name hits, which are listed in file order, not scored (their ``combined_score`` is a
    placeholder 0)."""
    if any(key in item for key in UNSCORED_HIT_KEYS):
        return []
    if all(item.get(key) is None for key, _ in SCORE_FIELDS if key != "combined_score"):
        return []
    return [(label, format_score(item.get(key))) for key, label in SCORE_FIELDS]


def file_match_lines(
    item: Mapping[str, Any],
    snippets: Sequence[Any],
    *,
    path: str,
    language: str,
) -> list[Line]:
    """An exact/regex hit: its file's snippets one after another, the characters the search
    matched marked (its ``matches`` ranges, not the query's words: ``"max_retries"`` must not
    mark "max" in ``pool_maxsize``)."""
    ranges = match_ranges(item.get("matches"))
    lines: list[Line] = []
    for snippet in snippets[:MAX_FILE_SNIPPETS]:
        if not isinstance(snippet, Mapping):
            continue
        for line in highlight_lines(
            snippet_source(_text(snippet.get("content"))),
            path=path,
            language=language,
            first_line=max(_int(snippet.get("start_line"), 1), 1),
            ranges=ranges,
        ):
            lines.append(Line(line.number, line.html, line.number in ranges))
    return lines


def match_ranges(raw_matches: Any) -> dict[int, list[tuple[int, int]]]:
    """Line number -> the ``[start, end)`` character ranges the search matched on it."""
    found: dict[int, list[tuple[int, int]]] = {}
    for match in raw_matches if isinstance(raw_matches, list) else []:
        if not isinstance(match, Mapping):
            continue
        spans = found.setdefault(_int(match.get("line"), 0), [])
        for span in match.get("ranges") or []:
            if isinstance(span, list | tuple) and len(span) == 2:
                start, end = _int(span[0], 0), _int(span[1], 0)
                if 0 <= start < end:
                    spans.append((start, end))
    return found


def snippet_source(content: str) -> str:
    """The part of a chunk a snippet can show: minified or generated chunks can be huge."""
    if len(content) <= SNIPPET_MAX_CHARS:
        return content
    lines = content.split("\n")[:SNIPPET_SCAN_LINES]
    return "\n".join(line if len(line) <= 400 else line[:400] + " …" for line in lines)


def _is_uuid(value: str) -> bool:
    return bool(re.fullmatch(r"[0-9a-fA-F-]{32,36}", value))
