"""Evaluation hooks for ask: the citation check and retrieval with HyDE / expansion.

``check_citations(questions)`` asks each question and verifies, independently of the code that
built the answer, that every source it cites is a chunk that was in the model's context and
still is, in the database, exactly that repository, path, line range and indexed commit. The
share of answers passing must be 100 %: a citation either resolves from chunk metadata or is
removed.

``retrieve_for_evaluation(question, hyde=..., expand=...)`` returns the snippets ask would give
the model, for the evaluation harness's ``--with-llm`` rows (ranked chunk locations to score
like any other configuration).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from accounts.visibility import Viewer
from indexing.models import Chunk
from search.ask.context import ContextSnippet
from search.ask.errors import AskFailed
from search.ask.service import AskRequest, answer_question, retrieve_context
from search.types import StageTrace

_MARKER = re.compile(r"\[(\d+)\]")


@dataclass
class CitationCheck:
    questions: int = 0
    answered: int = 0
    faithful: int = 0  # answers whose every citation resolves to a chunk of the context
    citations: int = 0
    removed: int = 0  # citations of numbers that were never given (removed, warned about)
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Share of answered questions whose citations all resolve (1.0 when none answered)."""
        return self.faithful / self.answered if self.answered else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "answered": self.answered,
            "faithful": self.faithful,
            "rate": self.rate,
            "citations": self.citations,
            "removed": self.removed,
            "failures": self.failures,
        }


def _resolves(source: dict[str, Any], context: Sequence[ContextSnippet]) -> str | None:
    """None if ``source`` is a context snippet and matches its live chunk row; else why not."""
    number = source.get("context_number")
    if not isinstance(number, int) or not 1 <= number <= len(context):
        return f"context number {number!r} was not in the context"
    snippet = context[number - 1]
    chunk = (
        Chunk.objects.filter(pk=snippet.chunk_id)
        .select_related("repository")
        .only(
            "path",
            "start_line",
            "end_line",
            "generation",
            "repository__active_generation",
            "repository__last_indexed_commit",
            "repository__name",
        )
        .first()
    )
    if chunk is None or chunk.generation != chunk.repository.active_generation:
        return "the cited chunk is not live"
    expected = {
        "repo_name": chunk.repository.name,
        "path": chunk.path,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "commit": chunk.repository.last_indexed_commit,
        "location": f"{chunk.repository.name}:{chunk.path}:{chunk.start_line}-{chunk.end_line}",
    }
    wrong = [key for key, value in expected.items() if source.get(key) != value]
    return f"source differs from its chunk in {', '.join(wrong)}" if wrong else None


def check_citations(
    questions: Sequence[str],
    *,
    repo_ids: list[UUID] | None = None,
    k: int = 8,
    expand: bool = False,
    hyde: bool = False,
    chat: Any = None,
    viewer: Viewer | None = None,
) -> CitationCheck:
    """Ask every question (as ``viewer``; default: unrestricted repositories only); count
    answers whose citations all resolve to context chunks."""
    check = CitationCheck()
    for question in questions:
        check.questions += 1
        request = AskRequest(
            question, repo_ids=repo_ids, k=k, expand=expand, hyde=hyde, viewer=viewer or Viewer()
        )
        try:
            result = answer_question(request, chat=chat)
        except AskFailed as exc:
            check.failures.append({"question": question, "error": exc.message})
            continue
        if not result.answered or result.answer is None:
            continue
        check.answered += 1
        sources = result.sources
        problems = [p for p in (_resolves(s, result.context) for s in sources) if p]
        markers = {int(m) for m in _MARKER.findall(result.answer["text"])}
        if any(not 1 <= m <= len(sources) for m in markers):
            problems.append("the answer shows a marker with no source")
        check.citations += len(sources)
        check.removed += sum(1 for w in result.warnings if w.startswith("removed citation"))
        if problems:
            check.failures.append({"question": question, "problems": problems})
        else:
            check.faithful += 1
    return check


def retrieve_for_evaluation(
    question: str,
    *,
    k: int = 10,
    hyde: bool = False,
    expand: bool = False,
    repo_ids: list[UUID] | None = None,
    chat: Any = None,
    viewer: Viewer | None = None,
) -> tuple[list[ContextSnippet], list[StageTrace]]:
    """The snippets ask would give the model for ``question`` (ranked), and the stage trace."""
    from llm import get_chat

    trace: list[StageTrace] = []
    request = AskRequest(
        question, repo_ids=repo_ids, k=k, hyde=hyde, expand=expand, viewer=viewer or Viewer()
    )
    snippets = retrieve_context(request, chat if chat is not None else get_chat(), trace, {})
    return snippets, trace
