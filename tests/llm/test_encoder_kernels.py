"""The encoder's compiled element-wise steps against plain float64 references, and the packed
encoder's vectors against the padded computation they replaced."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm import encoder_kernels as kernels
from llm.local_embedding import embed_texts, get_runtime


def test_gelu_is_berts_exact_erf_gelu() -> None:
    x = np.linspace(-12, 12, 200_001, dtype=np.float32).reshape(-1, 1)
    bias = np.array([0.25], dtype=np.float32)
    got = x.copy()
    kernels.bias_gelu(got, bias)
    v = x[:, 0].astype(np.float64) + 0.25
    want = 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))
    assert np.abs(got[:, 0] - want).max() < 2e-6
    # Far out, GELU is the identity on the right and zero on the left.
    assert got[-1, 0] == pytest.approx(12.25) and got[0, 0] == 0.0


def test_softmax_matches_the_textbook_formula_on_wide_ranges() -> None:
    rng = np.random.default_rng(7)
    for width in (1, 7, 16, 37, 170, 256):
        scores = (rng.standard_normal((40, width)) * 30).astype(np.float32)
        scores[0] += 1000.0  # huge scores: no overflow (the row's maximum is taken first)
        scores[1] -= 1000.0
        got = scores.copy()
        kernels.softmax_rows(got)
        shifted = scores.astype(np.float64) - scores.max(axis=1, keepdims=True)
        want = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        assert np.abs(got - want).max() < 1e-6, width
        np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-5)


def test_layer_norms_match_the_definition() -> None:
    rng = np.random.default_rng(3)
    x, residual = (rng.standard_normal((50, 384)).astype(np.float32) * 4 for _ in range(2))
    bias, weight, shift = (rng.standard_normal(384).astype(np.float32) for _ in range(3))

    def reference(v: np.ndarray) -> np.ndarray:
        v = v.astype(np.float64)
        centred = v - v.mean(axis=1, keepdims=True)
        return centred / np.sqrt(centred.var(axis=1, keepdims=True) + 1e-12) * weight + shift

    plain = x.copy()
    kernels.layer_norm(plain, weight, shift, 1e-12)
    assert np.abs(plain - reference(x)).max() < 2e-5
    added = x.copy()
    kernels.add_norm(added, bias, residual, weight, shift, 1e-12)
    assert np.abs(added - reference(x + bias + residual)).max() < 2e-5


def _padded_forward(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The textbook padded BERT pass in float64 (masked attention, mean over real tokens)."""
    rt = get_runtime()
    heads, head_dim = rt.heads, rt.hidden // rt.heads

    def norm(v: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        c = v - v.mean(-1, keepdims=True)
        return c / np.sqrt((c * c).mean(-1, keepdims=True) + rt.eps) * w + b

    batch, length = ids.shape
    x = norm(rt.word_emb[ids] + rt.pos_emb[:length] + rt.type_emb[0], *rt.emb_ln)
    x = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    for layer in rt.layers:
        qkv = (x @ layer.w_qkv + layer.b_qkv).reshape(batch, length, 3, heads, head_dim)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) + (mask[:, None, None, :] - 1.0) * 1e9
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        ctx = (p @ v).transpose(0, 2, 1, 3).reshape(batch, length, rt.hidden)
        x = norm(ctx @ layer.w_out + layer.b_out + x, layer.ln1_w, layer.ln1_b)
        inter = x @ layer.w_in + layer.b_in
        inter = 0.5 * inter * (1 + erf(inter / math.sqrt(2)))
        x = norm(inter @ layer.w_down + layer.b_down + x, layer.ln2_w, layer.ln2_b)
    pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def test_packed_vectors_equal_the_padded_computation() -> None:
    rt = get_runtime()
    texts = [
        "def f(x): return x",
        "class ConnectionPool:\n    def acquire(self):\n        return self.free.pop()\n" * 3,
        "\n".join(f"    value_{i} = compute({i})" for i in range(120)),  # over 256 tokens
        "where is the retry policy configured?",
    ]
    seqs = [rt.sequences_for(ids, "head", 1)[0] for ids in rt.tokenize(texts)]
    length = max(map(len, seqs))
    ids = np.zeros((len(seqs), length), dtype=np.int64)
    mask = np.zeros((len(seqs), length))
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)], mask[row, : len(seq)] = seq, 1.0
    want = _padded_forward(ids, mask)
    got = embed_texts(texts)
    assert (got * want).sum(axis=1).min() > 0.99999
    assert np.abs(got - want).max() < 5e-5


def test_a_texts_vector_does_not_depend_on_the_texts_beside_it() -> None:
    rng = np.random.default_rng(11)
    words = ["parse", "header", "retry", "pool", "config", "(", ")", ":", "return", "self"]
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(1, 400, size=40)]
    together = embed_texts(texts)
    for batch_size in (3, 32):
        np.testing.assert_allclose(embed_texts(texts, batch_size=batch_size), together, atol=2e-6)
    alone = np.stack([embed_texts([t])[0] for t in texts[:6]])
    np.testing.assert_allclose(alone, together[:6], atol=2e-6)
