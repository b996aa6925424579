"""What the test model server writes: answers and stream pieces in the Ollama / OpenAI wire
formats, and the deterministic embedding it serves (``tests.model_server``)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Deterministic bag-of-words vector: shared words give a high cosine."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vec[index] += 1.0 if digest[4] & 1 else -1.0
    norm = sum(v * v for v in vec) ** 0.5
    if norm == 0:
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


MID_STREAM = ("cut", "malformed", "stall", "stream_error")


def stream_piece(sse: bool, model: Any, text: str, *, done: bool) -> bytes:
    if sse:
        choice: dict[str, Any] = {"index": 0, "delta": {"content": text} if text else {}}
        choice["finish_reason"] = "stop" if done else None
        chunk = {"object": "chat.completion.chunk", "model": model, "choices": [choice]}
        return f"data: {json.dumps(chunk)}\n\n".encode()
    line: dict[str, Any] = {
        "model": model,
        "message": {"role": "assistant", "content": text},
        "done": done,
    }
    if done:
        line["done_reason"] = "stop"
    return (json.dumps(line) + "\n").encode()


def ok_response(payload: Any) -> tuple[int, dict[str, str], bytes]:
    return 200, {}, json.dumps(payload).encode()
