"""Query expansion: the chat model writes alternative phrasings of the query (SPEC §3.1).

The alternatives run through the same retrieval as the original, with half its weight in
fusion. The model is asked for JSON in a fixed shape (``{"queries": [...]}``, constrained by a
JSON schema the server enforces where it can: Ollama's ``format``, OpenAI's ``response_format``)
and the answer is read leniently (``llm.chat_parsing``: fenced or wrapped JSON, a bare list,
numbered lines); the trace's detail says how it was read (``parsed_from``). Anything unusable
-- no chat model, a timeout, a busy model, an error, an answer with no new phrasing in it --
leaves the search with the original query alone, and the reason goes in the trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llm import ChatUnavailable, ModelError, ModelUnavailable
from llm.chat_parsing import ChatParseError, parse_json, parse_string_list
from search.types import SearchRequest, StageTrace, record_stage

MAX_ALTERNATIVE_CHARS = 300

SYSTEM_PROMPT = (
    "You help a code search engine. Rewrite the user's search query as alternative phrasings "
    "that would find the same code: use the identifiers, API names and technical words a "
    'programmer would write in that code. Answer with JSON only: an object whose "queries" '
    "list holds the phrasings."
)
# No example in the prompt: SmolLM2-135M under the schema copied one literally -- '{"queries":
# ["...", "..."]}' for 38 of 40 questions, an example query's phrasings for 3 of 3.


def expansion_schema(count: int) -> dict[str, Any]:
    """The JSON shape asked for: ``{"queries": [count strings]}``."""
    return {
        "type": "object",
        "properties": {
            "queries": {
                "type": "array",
                "items": {"type": "string", "maxLength": MAX_ALTERNATIVE_CHARS},
                "minItems": 1,
                "maxItems": count,
            }
        },
        "required": ["queries"],
    }


def read_alternatives(answer: str, count: int) -> tuple[list[str], str]:
    """Candidate phrasings in ``answer`` and how they were read: "json" or "lines"."""
    try:
        parse_json(answer, expect=(list, dict))
        parsed_from = "json"
    except ChatParseError:
        parsed_from = "lines"
    return parse_string_list(answer, limit=count * 3), parsed_from


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


def expansion_stage(
    chat: Callable[[], Any], request: SearchRequest, trace: list[StageTrace]
) -> list[str]:
    """The question plus the chat model's alternative phrasings (the "expansion" stage, run
    when the request asks for it; ``chat`` gives the executor's chat client)."""
    queries = [request.query]
    with record_stage(trace, "expansion") as stage:
        expansion = expand_query(
            chat(),
            request.query,
            count=request.tuning.expansion_count,
            timeout_s=request.tuning.expansion_timeout_s,
        )
        stage.set(
            expansion.status,
            expansion.reason,
            alternatives=expansion.alternatives,
            **expansion.detail,
        )
        queries += expansion.alternatives
    return queries


def expand_query(chat: Any, query: str, *, count: int = 2, timeout_s: float = 8.0) -> Expansion:
    """``count`` alternative phrasings of ``query`` from ``chat`` (an ``llm`` chat client)."""
    if not getattr(chat, "available", False):
        return Expansion("skipped", "no chat model configured")
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"Query: {query}\n\nWrite {count} alternative phrasings.",
        },
    ]
    try:
        answer = chat.chat(
            messages, max_tokens=200, timeout=timeout_s, schema=expansion_schema(count)
        )
    except ChatUnavailable:
        return Expansion("skipped", "no chat model configured")
    except ModelUnavailable as exc:
        reason = f"chat model unavailable ({_short(exc)}); timeout {timeout_s:g} s"
        return Expansion("skipped", reason)
    except ModelError as exc:
        return Expansion("failed", f"chat model error: {_short(exc)}")
    candidates, parsed_from = read_alternatives(answer, count)
    alternatives = clean_alternatives(candidates, query, count)
    detail: dict[str, Any] = {"output": "json_schema", "parsed_from": parsed_from}
    if not alternatives:
        return Expansion(
            "failed",
            "the chat model's answer held no usable phrasing",
            detail={**detail, "fallback": "the original query only", "answer": answer[:200]},
        )
    return Expansion("ran", alternatives=alternatives, detail=detail)


def _short(exc: Exception, limit: int = 160) -> str:
    text = str(exc)
    return text if len(text) <= limit else text[: limit - 1] + "…"
