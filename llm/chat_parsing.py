"""Turning chat-model text into data: JSON extraction and yes/no verdicts.

Small models wrap JSON in markdown fences, add prose around it, leave trailing commas or use
single quotes. ``parse_json`` recovers the value when a reasonable reader could;
``parse_yes_no`` reads a relevance verdict with a confidence, from JSON or from keywords.
Used by query expansion, rerank and ask.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


class ChatParseError(ValueError):
    """The answer holds no recoverable JSON value."""


def _candidates(text: str) -> list[str]:
    """Substrings that may be the JSON value, most likely first."""
    found = [m.group(1).strip() for m in _FENCE.finditer(text)]
    stripped = text.strip()
    found.append(stripped)
    # Balanced {...} / [...] regions wherever they sit in the prose (a few, in order).
    for opener, closer in (("{", "}"), ("[", "]")):
        start = stripped.find(opener)
        tries = 0
        while start != -1 and tries < 20:
            tries += 1
            end = _balanced_end(stripped, start, opener, closer)
            if end is None:
                start = stripped.find(opener, start + 1)
                continue
            found.append(stripped[start : end + 1])
            start = stripped.find(opener, end + 1)
    return found


def _balanced_end(text: str, start: int, opener: str, closer: str) -> int | None:
    depth = 0
    quote: str | None = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i
    return None


def _single_to_double_quotes(text: str) -> str:
    """Python-literal style ``{'a': 'it\\'s'}`` to JSON, leaving double-quoted strings alone."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is None:
            if ch in "\"'":
                quote = ch
                out.append('"')
            else:
                out.append(ch)
        elif ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append("'" if nxt == "'" else ch + nxt)
            i += 1
        elif ch == quote:
            quote = None
            out.append('"')
        elif ch == '"':
            out.append('\\"')
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _loads_lenient(candidate: str) -> Any:
    attempts = [candidate, _TRAILING_COMMA.sub(r"\1", candidate)]
    if "'" in candidate:
        converted = _single_to_double_quotes(candidate)
        attempts += [converted, _TRAILING_COMMA.sub(r"\1", converted)]
    for attempt in attempts:
        # Python-style literals some models emit.
        for py, js in (("True", "true"), ("False", "false"), ("None", "null")):
            attempt = re.sub(rf"(?<![\w\"]){py}(?![\w\"])", js, attempt)
        try:
            return json.loads(attempt)
        except ValueError:
            continue
    raise ValueError


def parse_json(text: str, *, expect: type | tuple[type, ...] | None = None) -> Any:
    """The JSON value in a chat answer; ``expect`` (e.g. ``dict`` or ``list``) filters.

    Raises ChatParseError when nothing usable is found.
    """
    if not isinstance(text, str) or not text.strip():
        raise ChatParseError("empty answer")
    for candidate in _candidates(text):
        try:
            value = _loads_lenient(candidate)
        except ValueError:
            continue
        if expect is None or isinstance(value, expect):
            return value
    raise ChatParseError(f"no JSON value in the answer: {text[:80]!r}")


def parse_string_list(text: str, *, limit: int | None = None) -> list[str]:
    """A list of strings from ``["a", "b"]``, ``{"queries": [...]}`` or numbered/bulleted lines."""
    try:
        value = parse_json(text, expect=(list, dict))
    except ChatParseError:
        value = None
    if isinstance(value, dict):
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if isinstance(value, list):
        items = [
            str(v).strip() for v in value if isinstance(v, str | int | float) and str(v).strip()
        ]
    else:
        items = []
        for line in text.splitlines():
            line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip().strip('"').strip()
            if line and not line.startswith("```") and not line.endswith(":"):
                items.append(line)
    return items[:limit] if limit is not None else items


@dataclass(frozen=True)
class Verdict:
    """A yes/no answer with a confidence in [0, 1]; ``parsed_from`` says how it was read."""

    relevant: bool
    confidence: float
    parsed_from: str  # "json" | "keyword"

    @property
    def score(self) -> float:
        """Probability-like relevance: confidence for yes, 1 - confidence for no."""
        return self.confidence if self.relevant else 1.0 - self.confidence


_YES = re.compile(r"\b(yes|relevant|true)\b", re.IGNORECASE)
_NO = re.compile(r"\b(no|not relevant|irrelevant|false|unrelated)\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(%)?")


def _confidence(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        m = _NUMBER.search(value)
        if not m:
            return {"high": 0.9, "medium": 0.6, "low": 0.3}.get(value.strip().lower())
        value, pct = float(m.group(1)), bool(m.group(2))
        if pct:
            value /= 100
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if number > 1.0 and number <= 100.0:  # a percentage
        number /= 100.0
    return min(1.0, max(0.0, number))


def _boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("yes", "y", "true", "relevant", "1"):
            return True
        if word in ("no", "n", "false", "irrelevant", "not relevant", "0"):
            return False
    if isinstance(value, int | float):
        return value > 0
    return None


def parse_yes_no(text: str, *, default_confidence: float = 0.5) -> Verdict | None:
    """Read a relevance verdict; None if the answer says neither yes nor no.

    Understands ``{"relevant": true, "confidence": 0.8}`` (also "answer"/"verdict" and
    percentages) and falls back to the first yes/no keyword in the prose.
    """
    try:
        data = parse_json(text, expect=dict)
    except ChatParseError:
        data = None
    if isinstance(data, dict):
        lowered = {str(k).lower(): v for k, v in data.items()}
        answer = None
        for key in ("relevant", "answer", "verdict", "is_relevant", "yes", "result"):
            if key in lowered:
                answer = _boolean(lowered[key])
                if answer is not None:
                    break
        if answer is not None:
            conf = None
            for key in ("confidence", "score", "probability", "certainty"):
                if key in lowered:
                    conf = _confidence(lowered[key])
                    if conf is not None:
                        break
            return Verdict(answer, default_confidence if conf is None else conf, "json")
    if not isinstance(text, str):
        return None
    yes, no = _YES.search(text), _NO.search(text)
    if not yes and not no:
        return None
    relevant = yes is not None and (no is None or yes.start() < no.start())
    conf_match = re.search(r"confidence\W{0,3}([\w.%]+)", text, re.IGNORECASE)
    conf = _confidence(conf_match.group(1)) if conf_match else None
    return Verdict(relevant, default_confidence if conf is None else conf, "keyword")
