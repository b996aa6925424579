"""Contextual retrieval (opt-in per repository): the chat model writes a one-line summary of each
chunk at index time, and the summary is embedded with the chunk.

It costs one model call per chunk, so it is off by default; a job records how many calls it will
make (``summaries_total``) before it makes them. A chunk that gains a summary loses its old
vectors, so the embedding stage recomputes them with the summary.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from indexing.models import Chunk, ChunkEmbedding, Repository

logger = logging.getLogger(__name__)

SUMMARY_MAX_TOKENS = 80
SUMMARY_TIMEOUT_SECS = 20.0
SUMMARY_MAX_CHARS = 300
SNIPPET_MAX_CHARS = 4000
CONCURRENCY = 4
SAVE_EVERY = 32

PROMPT = (
    "You summarise code for a search index. In one sentence of at most 30 words, say what this "
    "code does and where it fits in its repository. Answer with the sentence only."
)


@dataclass
class SummaryOutcome:
    written: int = 0
    failed: int = 0
    error: str | None = None


def chunks_needing_summary(repository: Repository) -> QuerySet[Chunk]:
    return Chunk.objects.filter(
        repository=repository, generation=repository.active_generation, summary=""
    ).order_by("id")


def _messages(chunk: Chunk, repository_name: str) -> list[dict[str, str]]:
    where = f"{repository_name}: {chunk.path}" + (f" ({chunk.symbol})" if chunk.symbol else "")
    return [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": f"{where}\n\n{chunk.content[:SNIPPET_MAX_CHARS]}"},
    ]


def clean_summary(text: str) -> str:
    """One line, no surrounding quotes, bounded."""
    line = next((part.strip() for part in text.strip().splitlines() if part.strip()), "")
    return line.strip("\"'` ")[:SUMMARY_MAX_CHARS]


def summarise_chunks(
    repository: Repository,
    chat: Any,
    *,
    on_progress: Callable[[int], None] | None = None,
) -> SummaryOutcome:
    """Summarise every live chunk without a summary, ``CONCURRENCY`` calls at a time.

    Stops at the first sign the model is unreachable (the rest stay unsummarised and are
    embedded without a summary); a garbage or empty answer only costs that chunk its summary.
    """
    from llm import ModelUnavailable

    outcome = SummaryOutcome()
    pending = list(chunks_needing_summary(repository).only("id", "path", "symbol", "content"))
    done: list[Chunk] = []

    def ask(chunk: Chunk) -> str:
        answer = chat.chat(
            _messages(chunk, repository.name),
            max_tokens=SUMMARY_MAX_TOKENS,
            timeout=SUMMARY_TIMEOUT_SECS,
        )
        return clean_summary(str(answer))

    def flush() -> None:
        if not done:
            return
        Chunk.objects.bulk_update(done, ["summary"])
        # Their old vectors were computed without the summary: recompute them.
        ChunkEmbedding.objects.filter(chunk_id__in=[chunk.pk for chunk in done]).delete()
        done.clear()

    with ThreadPoolExecutor(max_workers=CONCURRENCY, thread_name_prefix="summaries") as pool:
        for start in range(0, len(pending), SAVE_EVERY):
            batch = pending[start : start + SAVE_EVERY]
            futures = [(chunk, pool.submit(ask, chunk)) for chunk in batch]
            for chunk, future in futures:
                try:
                    summary = future.result()
                except ModelUnavailable as error:
                    outcome.error = str(error)
                    outcome.failed += 1
                    continue
                except Exception as error:  # garbage answer, 4xx: this chunk only
                    logger.warning("summary failed chunk=%s: %s", chunk.pk, error)
                    outcome.failed += 1
                    continue
                if not summary:
                    outcome.failed += 1
                    continue
                chunk.summary = summary
                done.append(chunk)
                outcome.written += 1
            flush()
            if on_progress is not None:
                on_progress(outcome.written)
            if outcome.error is not None:
                outcome.failed += len(pending) - start - len(batch)
                break
    return outcome
