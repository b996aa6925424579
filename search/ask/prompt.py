"""The messages sent to the chat model to answer a question from numbered snippets.

Each snippet is shown as ``[n]`` with its path and symbol but no line numbers: the model cites
by number, and locations are added afterwards from chunk metadata.

The prompt is sized to the model's context window (``LLM_CONTEXT_TOKENS``): after room for the
answer, snippets are taken whole, in rank order, while they fit; the rest are left out (the
count is reported) rather than cut mid-code. Only a first snippet too long for the window on
its own is shortened. Tokens are estimated from characters (``CHARS_PER_TOKEN``, on the safe
side for code, which tokenises densely).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
MAX_ANSWER_TOKENS = 900
CHARS_PER_TOKEN = 3.0
TEMPLATE_TOKENS = 48  # the chat template's role markers and the like
MIN_FIRST_SNIPPET_CHARS = 200


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def answer_tokens(context_tokens: int) -> int:
    """Tokens left for the answer: up to 900, at most a quarter of the window."""
    return max(32, min(MAX_ANSWER_TOKENS, context_tokens // 4))


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


def _user(question: str, blocks: Sequence[str]) -> str:
    return (
        f"Snippets [1]..[{len(blocks)}]:\n\n"
        + "\n\n".join(blocks)
        + f"\n\nQuestion: {question}\n\nAnswer, citing snippet numbers:"
    )


@dataclass
class Prompt:
    messages: list[dict[str, str]]
    given: int  # snippets in the prompt: the first ``given`` of those offered
    left_out: int  # snippets that did not fit the context window
    tokens: int  # the prompt's estimated size
    budget: int  # tokens the prompt may take (the window minus the answer's room)
    answer_tokens: int

    def detail(self, context_tokens: int) -> dict[str, int]:
        return {
            "context_tokens": context_tokens,
            "prompt_tokens_estimate": self.tokens,
            "answer_tokens": self.answer_tokens,
            "snippets_given": self.given,
            "snippets_left_out": self.left_out,
        }


def build_prompt(
    question: str, snippets: Sequence[ContextSnippet], *, context_tokens: int = 8192
) -> Prompt:
    """System + user messages with as many whole snippets (numbered from 1) as fit."""
    room = answer_tokens(context_tokens)
    budget = max(64, context_tokens - room - TEMPLATE_TOKENS)
    per_snippet = max(400, min(MAX_SNIPPET_CHARS, MAX_CONTEXT_CHARS // max(1, len(snippets))))
    fixed = estimate_tokens(SYSTEM_PROMPT) + estimate_tokens(_user(question, []))
    blocks: list[str] = []
    used = fixed
    for number, snippet in enumerate(snippets, start=1):
        block = snippet_block(number, snippet, per_snippet)
        cost = estimate_tokens(block) + 1
        if used + cost > budget:
            if blocks:
                break
            # Not even the best snippet fits whole: give the model what the window holds.
            chars = int((budget - used) * CHARS_PER_TOKEN) - 80
            block = snippet_block(number, snippet, max(MIN_FIRST_SNIPPET_CHARS, chars))
            cost = estimate_tokens(block) + 1
        blocks.append(block)
        used += cost
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": _user(question, blocks)},
    ]
    tokens = sum(estimate_tokens(m["content"]) for m in messages)
    return Prompt(messages, len(blocks), len(snippets) - len(blocks), tokens, budget, room)
