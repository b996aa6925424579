"""The cross-encoder of the search's rerank stage: in-process, or a rerank server.

``LLM_RERANK_PROVIDER=local`` (the default) runs ms-marco-MiniLM-L-12-v2 on onnxruntime
(``llm.onnx_models``). ``server`` posts to a ``/v1/rerank`` endpoint as llama.cpp's server
(``--reranking``), text-embeddings-inference, Jina and vLLM serve it::

    POST {LLM_RERANK_BASE_URL or LLM_BASE_URL}/v1/rerank
    {"model": "bge-reranker-v2-m3", "query": "...", "documents": ["...", ...], "top_n": n}
    -> {"results": [{"index": 0, "relevance_score": 0.93}, ...]}

(text-embeddings-inference's own ``/rerank`` answer, a bare list of ``{"index", "score"}``, is
read too.) Either kind answers ``score(query, passages, max_tokens=, timeout=)`` with one number
per passage, higher = more relevant; ``batch`` says how many passages one call should carry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from llm import http
from llm.config import ModelSettings
from llm.errors import ModelResponseError

CHARS_PER_TOKEN = 4  # a server tokenizes itself: passages are cut to about max_tokens


class ServerReranker:
    """A rerank server's relevance scores, with the model layer's timeouts and retries."""

    batch = 64  # one request for every candidate: the server batches on its side
    passage_tokens = 256  # about 1,000 characters a passage unless the search says

    def __init__(self, cfg: ModelSettings) -> None:
        root = (cfg.rerank_base_url or cfg.base_url).rstrip("/")
        self.model = cfg.rerank_model
        self.endpoint = http.Endpoint(
            provider="rerank",
            base_url=root if root.endswith("/v1") else root + "/v1",
            api_key=cfg.api_key,
            connect_timeout=cfg.connect_timeout,
            read_timeout=cfg.timeout,
            max_retries=cfg.max_retries,
        )

    def __repr__(self) -> str:
        return f"<ServerReranker {self.model or '(server default)'} at {self.endpoint!r}>"

    def score(
        self,
        query: str,
        passages: Sequence[str],
        *,
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        limit = (max_tokens or self.passage_tokens) * CHARS_PER_TOKEN
        body: dict[str, Any] = {
            "query": query,
            "documents": [p[:limit] for p in passages],
            "top_n": len(passages),
        }
        if self.model:
            body["model"] = self.model
        answer = http.request_json(self.endpoint, "POST", "/rerank", body, timeout=timeout)
        return self._read(answer, len(passages))

    def _read(self, answer: Any, count: int) -> np.ndarray:
        items = answer.get("results") if isinstance(answer, dict) else answer
        if not isinstance(items, list):
            raise self._bad("the /v1/rerank answer has no 'results' list")
        scores = np.full(count, np.nan, dtype=np.float32)
        for item in items:
            if not isinstance(item, dict):
                raise self._bad("a /v1/rerank result is not an object")
            index = item.get("index")
            value = item.get("relevance_score", item.get("score"))
            if not isinstance(index, int) or not 0 <= index < count:
                raise self._bad(f"a /v1/rerank result has a bad index {index!r}")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._bad("a /v1/rerank result has no numeric relevance_score")
            scores[index] = float(value)
        if np.isnan(scores).any():
            missing = int(np.isnan(scores).sum())
            raise self._bad(f"the /v1/rerank answer left out {missing} of {count} documents")
        return scores

    def _bad(self, what: str) -> ModelResponseError:
        return ModelResponseError(what, provider="rerank", base_url=self.endpoint.base_url)


def build_reranker(cfg: ModelSettings) -> Any:
    """The reranker ``cfg`` names (the local model loads on first use)."""
    if cfg.rerank_provider == "server":
        return ServerReranker(cfg)
    from llm.onnx_models import get_cross_encoder

    return get_cross_encoder()
