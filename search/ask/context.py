"""The snippets an answer is written from, and where each one really is.

A ``ContextSnippet`` is one live chunk (active generation of a ready repository) with the
metadata that locates it: repository, path, lines, symbol, the indexed commit. Only these
fields ever become a location shown to a user; the model's text never does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from django.db.models import F

from accounts.visibility import Viewer
from indexing.models import Chunk, RepositoryStatus
from indexing.permalinks import blob_url
from indexing.repository_refs import link_refs
from indexing.upstream_urls import upstream_file_url
from indexing.visible import repository_filter

Origin = Literal["search", "hyde", "callee", "caller"]


@dataclass
class ContextSnippet:
    chunk_id: int
    repo_id: UUID
    repo_name: str
    repo_url: str
    commit: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    symbol_name: str
    kind: str
    language: str
    is_test: bool
    content: str
    calls: list[str] = field(default_factory=list)
    origin: Origin = "search"
    via: str = ""  # expansion: the symbol whose call (or definition) led here
    depth: int = 0  # expansion: call-graph distance from the retrieved chunks
    score: float | None = None  # retrieval: the executor's combined score
    branch: str = ""  # freshness: the branch and time of the repository's live generation
    indexed_at: datetime | None = None
    link_ref: str = ""  # how addresses name the repository (``name_links``); else its id

    @property
    def location(self) -> str:
        """``repository:path:start-end`` -- from chunk metadata only."""
        return f"{self.repo_name}:{self.path}:{self.start_line}-{self.end_line}"

    @property
    def app_url(self) -> str:
        """The web UI's permalink at the indexed commit with the lines marked, in the form
        search results use: ``/repos/<name>/-/blob/<commit>/<path>#L10-L20``."""
        ref = self.link_ref or str(self.repo_id)
        return blob_url(ref, self.commit, self.path, self.start_line, self.end_line)

    @property
    def upstream_url(self) -> str | None:
        """The lines on GitHub / GitLab / Gitea / Bitbucket at the commit, when the host is known."""
        return upstream_file_url(
            self.repo_url, self.commit, self.path, self.start_line, self.end_line
        )

    @property
    def permalink(self) -> str:
        return self.upstream_url or self.app_url

    def as_source(self, number: int | None = None, context_number: int | None = None) -> dict:
        """The JSON shape of a source (``number``: position among the cited sources)."""
        return {
            "number": number,
            "context_number": context_number,
            "repo_id": str(self.repo_id),
            "repo_name": self.repo_name,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "symbol": self.symbol,
            "kind": self.kind,
            "language": self.language,
            "commit": self.commit,
            "branch": self.branch,
            "indexed_at": self.indexed_at.isoformat() if self.indexed_at else None,
            "location": self.location,
            "permalink": self.permalink,
            "app_url": self.app_url,
            "upstream_url": self.upstream_url,
            "origin": self.origin,
            "via": self.via,
        }


def live_chunks(viewer: Viewer, **filters: Any) -> Any:
    """Chunks of the active generation of ready repositories ``viewer`` may see (a queryset)."""
    return (
        Chunk.objects.filter(
            generation=F("repository__active_generation"),
            repository__status=RepositoryStatus.READY,
            **filters,
        )
        .filter(repository_filter(viewer, "repository__"))
        .select_related("repository")
    )


def snippet_from_chunk(chunk: Chunk, **extra: Any) -> ContextSnippet:
    repository = chunk.repository
    return ContextSnippet(
        chunk_id=chunk.pk,
        repo_id=repository.pk,
        repo_name=repository.name,
        repo_url=repository.url,
        commit=repository.last_indexed_commit,
        branch=repository.branch,
        indexed_at=repository.last_indexed_at,
        path=chunk.path,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        symbol=chunk.symbol,
        symbol_name=chunk.symbol_name,
        kind=chunk.kind,
        language=chunk.language,
        is_test=chunk.is_test,
        content=chunk.content,
        calls=[c for c in (chunk.calls or []) if isinstance(c, str)],
        **extra,
    )


def load_snippets(
    chunk_ids: Sequence[int],
    viewer: Viewer,
    *,
    origin: Origin = "search",
    scores: dict[int, float] | None = None,
    any_branch: bool = False,
) -> list[ContextSnippet]:
    """Snippets for ``chunk_ids`` in that order; chunks no longer live (or in a repository
    ``viewer`` may not see) are left out. ``any_branch``: the ids come from a search of other
    branches (``search.retrieval.scope``), whose chunks are not the default generation's."""
    chunks = (
        Chunk.objects.filter(pk__in=list(chunk_ids), repository__status=RepositoryStatus.READY)
        .filter(repository_filter(viewer, "repository__"))
        .select_related("repository")
        if any_branch
        else live_chunks(viewer, pk__in=list(chunk_ids))
    )
    by_id = {c.pk: c for c in chunks}
    return name_links(
        [
            snippet_from_chunk(
                by_id[cid], origin=origin, score=(scores or {}).get(cid) if scores else None
            )
            for cid in chunk_ids
            if cid in by_id
        ],
        viewer,
    )


def name_links(snippets: list[ContextSnippet], viewer: Viewer) -> list[ContextSnippet]:
    """``snippets``, each addressed by its repository's name where that names one repository
    ``viewer`` may see (``indexing.repository_refs.link_refs``), else by its id."""
    refs = link_refs({(s.repo_id, s.repo_name) for s in snippets}, viewer)
    for snippet in snippets:
        snippet.link_ref = refs.get(snippet.repo_id, "")
    return snippets


def distinct(snippets: Iterable[ContextSnippet]) -> list[ContextSnippet]:
    """``snippets`` without repeated chunks (the first occurrence wins)."""
    seen: set[int] = set()
    kept = []
    for snippet in snippets:
        if snippet.chunk_id not in seen:
            seen.add(snippet.chunk_id)
            kept.append(snippet)
    return kept
