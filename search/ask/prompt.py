"""The messages sent to the chat model to answer a question from numbered snippets.

Each snippet is shown as ``[n]`` with its path and symbol but no line numbers: the model cites
by number, and locations are added afterwards from chunk metadata.
"""

from __future__ import annotations

from collections.abc import Sequence

from search.ask.context import ContextSnippet

SYSTEM_PROMPT = """You answer questions about a code base, using only the numbered snippets \
you are given.
Rules:
- Cite the snippets that support each statement by their number in square brackets, e.g. [2] \
or [1][3]. Cite only numbers you were given.
- Never write line numbers or file:line locations; the citation numbers are turned into exact \
locations for the reader.
- If the snippets do not answer the question, say so plainly instead of guessing.
- Be concise: a few sentences or a short list."""

MAX_SNIPPET_CHARS = 2000  # per snippet
MAX_CONTEXT_CHARS = 24_000  # all snippets together


def _label(snippet: ContextSnippet) -> str:
    parts = [f"{snippet.repo_name}/{snippet.path}"]
    if snippet.symbol:
        parts.append(f"symbol {snippet.symbol}")
    if snippet.origin == "callee":
        parts.append(f"definition called from {snippet.via} (call-graph expansion)")
    elif snippet.origin == "caller":
        parts.append(f"calls {snippet.via} (call-graph expansion)")
    return " -- ".join(parts)


def snippet_block(number: int, snippet: ContextSnippet, max_chars: int) -> str:
    content = snippet.content
    if len(content) > max_chars:
        content = content[:max_chars] + "\n... (truncated)"
    return f"[{number}] {_label(snippet)}\n```{snippet.language.lower()}\n{content}\n```"


def build_messages(question: str, snippets: Sequence[ContextSnippet]) -> list[dict[str, str]]:
    """System + user messages; snippets numbered from 1 in the order given."""
    per_snippet = max(400, min(MAX_SNIPPET_CHARS, MAX_CONTEXT_CHARS // max(1, len(snippets))))
    blocks = [snippet_block(i, s, per_snippet) for i, s in enumerate(snippets, start=1)]
    user = (
        f"Snippets [1]..[{len(snippets)}]:\n\n"
        + "\n\n".join(blocks)
        + f"\n\nQuestion: {question}\n\nAnswer, citing snippet numbers:"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
