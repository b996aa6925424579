"""The MiniLM forward pass reposearch shipped before 4a6e12c, kept only as the benchmark's
baseline (``bench/embedding_runtime.py`` runs it beside the product's).

Padded batches: a call's sequences sorted by length, cut into batches of 32, each padded to its
longest sequence, split across the pool's threads, masked attention; element-wise steps in
numpy (GELU from the Abramowitz & Stegun erf, about 18 passes). The product's embed stage
called it with 32 texts at a time in chunk order, so each batch mixed short and long chunks.
"""

from __future__ import annotations

import numpy as np

from llm.local_embedding import MiniLMRuntime, _single_threaded_blas


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    x = x - mean
    var = np.einsum("...i,...i->...", x, x)[..., None] / x.shape[-1]
    x *= 1.0 / np.sqrt(var + eps)
    x *= weight
    x += bias
    return x


_P = np.float32(0.3275911 / np.sqrt(2.0))
_HALF_A = [
    np.float32(c / 2) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
]


def _gelu_inplace(x: np.ndarray) -> None:
    for start in range(0, x.shape[0], 64):
        block = x[start : start + 64]
        a = np.abs(block)
        t = a * _P
        t += 1.0
        np.reciprocal(t, out=t)
        poly = t * _HALF_A[0]
        for coef in _HALF_A[1:]:
            poly += coef
            poly *= t
        e = np.square(a)
        e *= -0.5
        np.exp(e, out=e)
        poly *= e
        poly *= a
        np.maximum(block, 0.0, out=block)
        block -= poly


class PaddedMiniLMRuntime(MiniLMRuntime):
    """The former runtime: same weights and tokenizer, padded batches."""

    def embed_sequences(self, sequences: list[list[int]], batch_size: int = 32) -> np.ndarray:
        out = np.zeros((len(sequences), self.dim), dtype=np.float32)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        with self._compute_lock, _single_threaded_blas(self._pool is not None):
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                parts = [p for p in np.array_split(np.asarray(idx), self.threads) if len(p)]
                pooled = self._map(lambda p: self._padded_rows(p, sequences), parts)
                for part, vectors in zip(parts, pooled, strict=True):
                    out[part] = vectors
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def _padded_rows(self, rows: np.ndarray, sequences: list[list[int]]) -> np.ndarray:
        batch = [sequences[i] for i in rows]
        length = max(len(s) for s in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        return self.padded_forward(ids, mask)

    def padded_forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        heads, head_dim = self.heads, self.hidden // self.heads
        embedded = self.word_emb[ids] + self.pos_emb[:length] + self.type_emb[0]
        x = _layer_norm(embedded.reshape(-1, self.hidden), *self.emb_ln, self.eps)
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        padded = [bool(mask[g].min() < 1.0) for g in range(batch)]
        for layer in self.layers:
            qkv = x @ layer.w_qkv
            qkv += layer.b_qkv
            qkv = qkv.reshape(batch, length, 3, heads, head_dim)
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
            k_t = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
            ctx = np.empty((batch, length, heads, head_dim), dtype=np.float32)
            for g in range(batch):
                scores = np.matmul(q[g], k_t[g])
                if padded[g]:
                    scores += key_bias[g]
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                denom = scores.sum(axis=-1, keepdims=True)
                weighted = np.matmul(scores, v[g])
                weighted /= denom
                ctx[g] = weighted.transpose(1, 0, 2)
            attn = ctx.reshape(batch * length, self.hidden) @ layer.w_out
            attn += layer.b_out
            attn += x
            x = _layer_norm(attn, layer.ln1_w, layer.ln1_b, self.eps)
            inter = x @ layer.w_in
            inter += layer.b_in
            _gelu_inplace(inter)
            down = inter @ layer.w_down
            down += layer.b_down
            down += x
            x = _layer_norm(down, layer.ln2_w, layer.ln2_b, self.eps)
        hidden = x.reshape(batch, length, self.hidden)
        summed = np.einsum("bld,bl->bd", hidden, mask)
        return summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)


def embed_texts_padded(runtime: PaddedMiniLMRuntime, texts: list[str]) -> np.ndarray:
    """What ``llm.local_embedding.embed_texts`` computed (head strategy, batches of 32)."""
    sequences = [runtime.sequences_for(ids, "head", 1)[0] for ids in runtime.tokenize(texts)]
    return runtime.embed_sequences(sequences, batch_size=32)
