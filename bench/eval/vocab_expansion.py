"""Query expansion from the repository's own vocabulary, measured as ranking levers (no chat model).

    .venv/bin/python bench/eval/vocab_expansion.py --corpus flask-3.0.3=bench/eval/flask-queries.json \\
        [--corpus ...] [--levers "vocab 0.6,vocab only 0.6"] [--cache DIR]

Issue 16 lists "query-side expansion from the repository's own vocabulary (identifiers,
comments)" among the levers. The repository's vocabulary here is the words of its identifiers:
every live chunk's symbol split into words (``indexing.identifiers.split_identifier``), letters
only, 3+ characters. Each word and each content word of the question are embedded alone
with the search's embedding model (cached on disk). A question word's expansions are
the vocabulary words whose cosine with it is at least ``tau``, best two, leaving out words the
question already has (``same_word``). The alternative query then runs as the chat model's
alternatives run (``search.retrieval.expansion``: the same retrieval, half weight in fusion), in
place of the expansion stage. Levers:

* ``vocab T``: the alternative is the question followed by its expansions;
* ``vocab only T``: the alternative is the expansions alone.

A question with no expansion runs unchanged. Everything else is ``levers.py``: same harness,
same intervals, and the same rule (tune on the tuning half only).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

import levers  # noqa: E402

CACHE = ROOT / "bench/results/granularity-cache"
PER_WORD = 2
_vocab: dict[Any, tuple[list[str], np.ndarray]] = {}
_embedder: Any = None


def _cached_embedder() -> Any:
    global _embedder
    if _embedder is None:
        from granularity import CachedEmbedder

        from llm import get_embedder

        _embedder = CachedEmbedder.in_folder(get_embedder(), CACHE)
    return _embedder


def vocabulary(repository_id: Any) -> tuple[list[str], np.ndarray]:
    """The repository's identifier words and their vectors (unit length)."""
    if repository_id not in _vocab:
        from indexing.identifiers import split_identifier
        from indexing.models import Chunk, Repository

        repo = Repository.objects.get(pk=repository_id)
        symbols = Chunk.objects.filter(
            repository=repo, generation=repo.active_generation
        ).values_list("symbol", flat=True)
        words = sorted(
            {
                w.lower()
                for s in symbols
                if s
                for w in split_identifier(s)
                if len(w) >= 3 and w.isalpha()
            }
        )
        vectors = _cached_embedder().embed(words) if words else np.zeros((0, 384))
        _vocab[repository_id] = (words, vectors)
    return _vocab[repository_id]


def expansions(query: str, repository_id: Any, tau: float) -> list[str]:
    from search.ranking.signals import content_words, same_word

    asked = list(dict.fromkeys(content_words(query)))
    words, vectors = vocabulary(repository_id)
    if not asked or not words:
        return []
    found: list[str] = []
    for qvec in _cached_embedder().embed(asked):
        sims = vectors @ qvec
        kept = 0
        for i in np.argsort(-sims):
            if sims[i] < tau or kept == PER_WORD:
                break
            candidate = words[i]
            if candidate in found or any(same_word(candidate, a) for a in asked):
                continue
            found.append(candidate)
            kept += 1
    return found


def stage(tau: float, alone: bool) -> Any:
    """An expansion stage for ``search.executor``: the question plus one alternative."""

    def expansion_stage(get_chat: Any, request: Any, trace: list[Any]) -> list[str]:
        from search.types import StageTrace

        repo_ids = list(request.repo_ids or [])
        extra = expansions(request.query, repo_ids[0], tau) if len(repo_ids) == 1 else []
        if not extra:
            trace.append(StageTrace(name="expansion", status="skipped", reason="no expansion"))
            return [request.query]
        alternative = " ".join(extra) if alone else request.query + " " + " ".join(extra)
        trace.append(StageTrace(name="expansion", status="ran", detail={"vocabulary": extra}))
        return [request.query, alternative]

    return expansion_stage


for _tau in (0.5, 0.6, 0.7):
    levers.LEVERS[f"vocab {_tau}"] = ({}, {"search.executor:expansion_stage": stage(_tau, False)})
    levers.LEVERS[f"vocab only {_tau}"] = (
        {},
        {"search.executor:expansion_stage": stage(_tau, True)},
    )


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--cache" in argv:  # the word vectors' cache (default: granularity.py's)
        at = argv.index("--cache")
        CACHE = Path(argv[at + 1])
        del argv[at : at + 2]
    if "--levers" not in argv:
        argv += ["--levers", ",".join(k for k in levers.LEVERS if k.startswith("vocab"))]
    raise SystemExit(levers.main(argv))
