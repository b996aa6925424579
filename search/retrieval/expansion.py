"""Query expansion: the chat model writes alternative phrasings of the query (SPEC §3.1).

The alternatives run through the same retrieval as the original, with half its weight in
fusion. Anything unusable -- no chat model, a timeout, an error, an answer with no phrasing in
it -- leaves the search with the original query alone, and the reason goes in the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm import ChatUnavailable, ModelError, ModelUnavailable
from llm.chat_parsing import parse_string_list

MAX_ALTERNATIVE_CHARS = 300

SYSTEM_PROMPT = (
    "You help a code search engine. Rewrite the user's search query as alternative phrasings "
    "that would find the same code: use the identifiers, API names and technical words a "
    "programmer would write in that code. Answer with a JSON list of strings only."
)


@dataclass
class Expansion:
    status: str  # "ran" | "skipped" | "failed"
    reason: str = ""
    alternatives: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


def clean_alternatives(candidates: list[str], original: str, count: int) -> list[str]:
    """Distinct, non-empty phrasings that differ from the original, capped in size."""
    seen = {" ".join(original.lower().split())}
    kept: list[str] = []
    for text in candidates:
        phrasing = " ".join(text.split())[:MAX_ALTERNATIVE_CHARS]
        key = phrasing.lower()
        if not any(ch.isalnum() for ch in phrasing) or key in seen:
            continue
        seen.add(key)
        kept.append(phrasing)
        if len(kept) == count:
            break
    return kept


def expand_query(chat: Any, query: str, *, count: int = 2, timeout_s: float = 8.0) -> Expansion:
    """``count`` alternative phrasings of ``query`` from ``chat`` (an ``llm`` chat client)."""
    if not getattr(chat, "available", False):
        return Expansion("skipped", "no chat model configured")
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"Query: {query}\n\nWrite {count} alternative phrasings as a JSON list.",
        },
    ]
    try:
        answer = chat.chat(messages, max_tokens=200, timeout=timeout_s, json_mode=False)
    except ChatUnavailable:
        return Expansion("skipped", "no chat model configured")
    except ModelUnavailable as exc:
        reason = f"chat model unavailable ({_short(exc)}); timeout {timeout_s:g} s"
        return Expansion("skipped", reason)
    except ModelError as exc:
        return Expansion("failed", f"chat model error: {_short(exc)}")
    alternatives = clean_alternatives(parse_string_list(answer, limit=count * 3), query, count)
    if not alternatives:
        return Expansion(
            "failed",
            "the chat model's answer held no usable phrasing",
            detail={"answer": answer[:200]},
        )
    return Expansion("ran", alternatives=alternatives)


def _short(exc: Exception, limit: int = 160) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[: limit - 1] + "…"
