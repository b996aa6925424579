"""The documents of symbol answers, built once for the API and the MCP tools.

A definition: ``name``, ``symbol`` (qualified), ``kind``, ``container`` (``Client`` of
``Client.send``), ``language``, ``repository``, ``repo_id``, ``path``, ``start_line``,
``end_line``, ``match`` (how its name matched), ``commit``, ``url`` (its permalink at the
indexed commit and its lines) and ``upstream_url``; with ``snippet`` when asked, its first lines;
with ``branch`` when the search named branches.
"""

from __future__ import annotations

from typing import Any

from accounts.visibility import Viewer
from indexing.permalinks import Permalinks
from indexing.upstream_urls import upstream_file_url
from search.symbols.lookup import DefinitionHit

SNIPPET_LINES = 12
MAX_LINE_CHARS = 300


def snippet_of(content: str, lines: int = SNIPPET_LINES) -> str:
    kept = content.split("\n")[:lines]
    return "\n".join(line[:MAX_LINE_CHARS] for line in kept)


def definition_doc(
    hit: DefinitionHit, links: Permalinks, *, snippet: bool = False
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": hit.name,
        "symbol": hit.symbol,
        "kind": hit.kind,
        "container": hit.container,
        "language": hit.language,
        "repository": hit.repo_name,
        "repo_id": str(hit.repo_id),
        "path": hit.path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "match": hit.tier,
        "commit": hit.commit,
        "url": links.blob(hit.repo_id, hit.commit, hit.path, hit.start_line, hit.end_line),
        "upstream_url": upstream_file_url(
            hit.repo_url, hit.commit, hit.path, hit.start_line, hit.end_line
        ),
    }
    if hit.branch:
        doc["branch"] = hit.branch
    if snippet:
        doc["snippet"] = snippet_of(hit.content)
    return doc


def definitions_doc(
    hits: list[DefinitionHit], viewer: Viewer, *, snippet: bool = False
) -> list[dict[str, Any]]:
    links = Permalinks({(h.repo_id, h.repo_name) for h in hits}, viewer)
    return [definition_doc(hit, links, snippet=snippet) for hit in hits]
