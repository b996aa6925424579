"""In-process models run by onnxruntime: a BERT-style text encoder and a cross-encoder.

Both run one input per call. The int8 models quantize their activations dynamically, with one
scale per tensor: in a batch, a text's vector would depend on the other texts beside it (cosine
0.994 between a text embedded alone and in a batch of 32). One at a time, the same text always
gives the same vector, and it was also the fastest way measured on 2 cores (no padding).

The files come from a wheel (``llm.local_models``); onnxruntime is a prebuilt wheel, so nothing
is compiled or downloaded. One session per model per process, loaded on first use and dropped
by ``release`` (a worker with nothing left to embed gives the memory back).

    encoder = get_encoder(BGE_SMALL)
    encoder.embed(["def read_config(path): ..."])            # (1, 384), L2-normalised
    encoder.embed(["where is the config read"], query=True)  # with the model's query prefix
    get_cross_encoder().score("where is the config read", ["def read_config..."])  # logits
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from llm.local_models import CROSS_ENCODER, LocalModel

LONG_TEXT_STRATEGIES = ("head", "windows")


def _session(model: LocalModel, threads: int | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, threads or os.cpu_count() or 1)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # no warnings about unused initialisers on every load
    path = model.files() / "model.onnx"
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class _Tokens:
    """The model's WordPiece tokenizer, without its own padding or truncation."""

    def __init__(self, model: LocalModel) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model.files() / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        cls_id, sep_id = self.tokenizer.token_to_id("[CLS]"), self.tokenizer.token_to_id("[SEP]")
        if cls_id is None or sep_id is None:
            raise ValueError(f"{model.name}: tokenizer has no [CLS]/[SEP] tokens")
        self.cls_id: int = cls_id
        self.sep_id: int = sep_id

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [e.ids for e in encoded]


def _padded(sequences: list[list[int]], types: list[list[int]] | None = None) -> dict[str, Any]:
    length = max(len(s) for s in sequences)
    ids = np.zeros((len(sequences), length), dtype=np.int64)
    mask = np.zeros_like(ids)
    type_ids = np.zeros_like(ids)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
        if types is not None:
            type_ids[row, : len(seq)] = types[row]
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": type_ids}


def _feeds(session: Any, arrays: dict[str, Any]) -> dict[str, Any]:
    wanted = {i.name for i in session.get_inputs()}
    return {name: value for name, value in arrays.items() if name in wanted}


class OnnxEncoder:
    """A sentence encoder (last hidden state -> mean or first-token pooling -> L2 norm)."""

    def __init__(self, model: LocalModel, *, threads: int | None = None) -> None:
        self.model = model
        self.dim = model.dim
        self.max_seq_length = model.max_seq_length
        self.tokens = _Tokens(model)
        self.session = _session(model, threads)

    def sequences_for(self, ids: list[int], strategy: str, max_windows: int) -> list[list[int]]:
        """Model inputs ([CLS] ... [SEP]) for one text under the long-text strategy."""
        room = self.max_seq_length - 2
        cls_id, sep_id = self.tokens.cls_id, self.tokens.sep_id
        if strategy == "head" or len(ids) <= room:
            return [[cls_id, *ids[:room], sep_id]]
        starts = range(0, len(ids), room)
        return [[cls_id, *ids[s : s + room], sep_id] for s in list(starts)[:max_windows]]

    def embed(
        self,
        texts: Sequence[str],
        *,
        query: bool = False,
        strategy: str = "head",
        max_windows: int = 8,
    ) -> np.ndarray:
        """(n, dim) float32 L2-normalised vectors; ``query`` adds the model's query prefix."""
        if strategy not in LONG_TEXT_STRATEGIES:
            raise ValueError(f"unknown long-text strategy {strategy!r}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefix = self.model.query_prefix if query else self.model.passage_prefix
        owners: list[int] = []
        weights: list[int] = []
        sequences: list[list[int]] = []
        for index, ids in enumerate(self.tokens.ids([prefix + t for t in texts])):
            for seq in self.sequences_for(ids, strategy, max_windows):
                owners.append(index)
                weights.append(max(1, len(seq) - 2))
                sequences.append(seq)
        vectors = self._encode(sequences)
        if len(sequences) > len(texts):  # windows: the token-weighted mean per text
            summed = np.zeros((len(texts), self.dim), dtype=np.float32)
            np.add.at(
                summed, np.asarray(owners), vectors * np.asarray(weights, np.float32)[:, None]
            )
            vectors = summed
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def _encode(self, sequences: list[list[int]]) -> np.ndarray:
        out = np.zeros((len(sequences), self.dim), dtype=np.float32)
        for row, sequence in enumerate(sequences):
            arrays = _padded([sequence])
            (hidden,) = self.session.run(None, _feeds(self.session, arrays))[:1]
            out[row] = hidden[0, 0] if self.model.pooling == "cls" else hidden[0].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


class OnnxCrossEncoder:
    """Scores (query, passage) pairs: a higher logit is more relevant."""

    def __init__(self, model: LocalModel = CROSS_ENCODER, *, threads: int | None = None) -> None:
        self.model = model
        self.tokens = _Tokens(model)
        self.session = _session(model, threads)

    batch = 4  # passages between two looks at the clock (each is one model call)
    # Tokens of each (query, passage) pair read unless the search says: measured on the
    # retrieval split, 128 ranks as well as 256 in about half the time (docs/benchmarks.md).
    passage_tokens = 128

    def score(
        self,
        query: str,
        passages: Sequence[str],
        *,
        max_tokens: int | None = None,
        timeout: float | None = None,  # a local call is short: the caller watches the clock
    ) -> np.ndarray:
        """One relevance logit per passage. The pair is ``[CLS] query [SEP] passage [SEP]``,
        cut to ``max_tokens`` (``passage_tokens`` unless given; the query keeps at most half
        of them)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        max_tokens = max_tokens or self.passage_tokens
        (query_ids,) = self.tokens.ids([query])
        query_ids = query_ids[: max(1, max_tokens // 2 - 2)]
        room = max(1, max_tokens - len(query_ids) - 3)
        cls_id, sep_id = self.tokens.cls_id, self.tokens.sep_id
        pairs, types = [], []
        for ids in self.tokens.ids(passages):
            first = [cls_id, *query_ids, sep_id]
            second = [*ids[:room], sep_id]
            pairs.append(first + second)
            types.append([0] * len(first) + [1] * len(second))
        out = np.zeros(len(pairs), dtype=np.float32)
        for row, (pair, type_ids) in enumerate(zip(pairs, types, strict=True)):
            arrays = _padded([pair], [type_ids])
            (logits,) = self.session.run(None, _feeds(self.session, arrays))[:1]
            out[row] = float(np.asarray(logits).reshape(-1)[0])
        return out


_loaded: dict[str, Any] = {}
_errors: dict[str, str] = {}
_lock = threading.Lock()


def _get(name: str, build: Any) -> Any:
    with _lock:
        loaded = _loaded.get(name)
        if loaded is None:
            try:
                loaded = _loaded[name] = build()
            except Exception as exc:
                _errors[name] = f"{type(exc).__name__}: {exc}"
                raise
            _errors.pop(name, None)
        return loaded


def get_encoder(model: LocalModel) -> OnnxEncoder:
    """The process-wide encoder of ``model`` (loaded once, thread-safe)."""
    return _get(model.name, lambda: OnnxEncoder(model))  # type: ignore[no-any-return]


def get_cross_encoder() -> OnnxCrossEncoder:
    """The process-wide cross-encoder (loaded once, thread-safe)."""
    return _get(CROSS_ENCODER.name, OnnxCrossEncoder)  # type: ignore[no-any-return]


def release() -> bool:
    """Drop every loaded session; True when one was loaded."""
    with _lock:
        released = bool(_loaded)
        _loaded.clear()
    return released


def status(name: str) -> tuple[bool, str | None]:
    """(loaded, last load error) of the model called ``name``, without loading it."""
    return name in _loaded, _errors.get(name)
