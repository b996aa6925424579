"""The local MiniLM runtime: real vectors, equal to sentence-transformers', offline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llm import get_embedder
from llm.config import ModelSettings
from llm.local_embedding import MAX_SEQ_LENGTH, embed_texts, get_runtime

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((Path(__file__).parent / "minilm_reference.json").read_text())


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_vectors_match_sentence_transformers() -> None:
    vectors = embed_texts(REFERENCE["texts"])
    reference = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    assert vectors.shape == reference.shape == (4, 384)
    for mine, theirs in zip(vectors, reference, strict=True):
        assert cos(mine, theirs) > 0.9999
    assert np.abs(vectors - reference).max() < 1e-4


def test_default_embedder_is_local_minilm_and_normalised() -> None:
    embedder = get_embedder(ModelSettings())
    assert (embedder.provider, embedder.model, embedder.dim) == ("local", "all-MiniLM-L6-v2", 384)
    assert embedder.space_key == "local/all-MiniLM-L6-v2/384"
    vectors = embedder.embed(["def add(a, b): return a + b", "", "x" * 5000])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_related_code_is_closer_than_unrelated_code() -> None:
    query, related, unrelated = embed_texts(
        [
            "where is the database connection pool configured",
            "def create_pool(dsn, max_size=10):\n    return ConnectionPool(dsn, max_size=max_size)",
            "def render_avatar(user):\n    return f'<img src=\"{user.avatar_url}\">'",
        ]
    )
    assert cos(query, related) > cos(query, unrelated) + 0.15
    a, b = embed_texts(["A man is playing a guitar.", "Someone plays the guitar."])
    assert cos(a, b) > 0.8


def test_batching_and_order_do_not_change_vectors() -> None:
    texts = [f"def function_{i}(x):\n    return x * {i}" + " + 1" * i for i in range(40)]
    together = embed_texts(texts, batch_size=32)
    alone = np.stack([embed_texts([t])[0] for t in texts[::7]])
    np.testing.assert_allclose(together[::7], alone, atol=1e-5)


def test_long_text_strategies() -> None:
    runtime = get_runtime()
    head = "def important_function():\n    return compute_the_answer()\n"
    tail = "\n".join(f"    log_line_{i} = format_message({i})" for i in range(400))
    text = head + tail
    assert len(runtime.tokenize([text])[0]) > 3 * MAX_SEQ_LENGTH
    head_only, windows = embed_texts([text]), embed_texts([text], strategy="windows")
    truncated = embed_texts([runtime.tokenizer.decode(runtime.tokenize([text])[0][:254])])
    # Head-only sees only the first 256 tokens, like sentence-transformers.
    assert cos(head_only[0], truncated[0]) > 0.99
    # The mean of windows also sees the rest, so it moves towards the tail's content.
    tail_vec = embed_texts([tail[-3000:]])[0]
    assert cos(windows[0], tail_vec) > cos(head_only[0], tail_vec)
    np.testing.assert_allclose(np.linalg.norm(windows, axis=1), 1.0, atol=1e-5)
    # A short text is one window: both strategies agree.
    short = embed_texts(["short text"], strategy="windows")
    np.testing.assert_allclose(short, embed_texts(["short text"]), atol=1e-6)
    with pytest.raises(ValueError):
        embed_texts(["x"], strategy="middle")


def test_windows_strategy_has_its_own_space() -> None:
    assert ModelSettings(long_text="windows").space_key == "local/all-MiniLM-L6-v2/384/windows"


NO_NETWORK_SCRIPT = r"""
import socket, sys
def refuse(*args, **kwargs):
    raise AssertionError("network access attempted: %r" % (args,))
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
sys.path.insert(0, sys.argv[1])
import os
from llm.local_embedding import embed_texts
v = embed_texts(["offline embedding works", "def f(): pass"])
assert v.shape == (2, 384), v.shape
assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"
print("ok")
"""


def test_loading_and_embedding_open_no_socket() -> None:
    # A fresh interpreter, so the weights are really loaded with the network forbidden.
    result = subprocess.run(
        [sys.executable, "-c", NO_NETWORK_SCRIPT, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=240,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
