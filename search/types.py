"""The executor's data: requests, hits, stage traces and results (see ``search.executor``), and
``record_stage``, which times one stage and records it in the trace."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from accounts.visibility import Viewer

StageStatus = Literal["ran", "skipped", "failed"]
logger = logging.getLogger("search.executor")


@dataclass(frozen=True)
class SearchTuning:
    """The constants retrieval and ranking are tuned with, in one place: each default is what
    the split benchmark measured (docs/benchmarks.md); the product never changes them, the
    benchmarks (``bench/eval``) vary them per run. Not a caller's choice: the API has no field
    for any of them."""

    # Retrieval
    list_depth: int = 50  # results taken from each ranked list
    fulltext_candidates: int = 1000  # rows ranked per full-text query at most
    all_terms_boost: float = 0.25  # BM25 x (1 + boost) when every query word matches
    exact_scan_max_rows: int = 30_000  # vector: exact scan when the filtered set is this small
    hnsw_ef_search: int = 200  # recall@10 >= 0.95 measured at 200 (docs/evaluation.md)

    # Fusion (Reciprocal Rank Fusion)
    rrf_k: int = 60
    original_weight: float = 2.0  # lists of the original query weigh this much
    first_rank_bonus: float = 0.05  # added once when a chunk ranks first in any list
    fusion_top: int = 30  # candidates kept after fusion and the ranking signals

    # Ranking signals on every fused candidate, before fusion_top's cut (search.ranking.ordering)
    intent_boost: float = 1.0  # tests/docs questions: their kind gains this x the best score
    exact_symbol_boost: float = 1.0  # a one-identifier query: the chunk defining that name first
    # Tests/docs the scope left out by default come back at this share of the fusion score they
    # would have had unscoped (search.ranking.fusion.place_left_out); 0: they stay out.
    left_out_weight: float = 0.5
    # A trained linear model orders the fused candidates (search.ranking.ordering); None:
    # REPO_SEARCH_LEARNED_FUSION decides.
    learned_fusion: bool | None = None

    # The local cross-encoder (search.ranking.cross_encoder, when on) reads the best
    # ``cross_encoder_top`` fused candidates within the budget.
    cross_encoder_top: int = 10
    cross_encoder_budget_s: float = 1.5  # past it, the candidates scored so far are reordered
    # query + chunk text, in model tokens; None: the model's own (``passage_tokens``: 128 for
    # the built-in model, 256 for a rerank server)
    cross_encoder_tokens: int | None = None
    cross_encoder_weight: float = 0.3  # the model's share of the reorder (0: fusion order)

    # Expansion and rerank
    expansion_count: int = 2
    expansion_timeout_s: float = 8.0
    rerank_top: int = 30
    rerank_concurrency: int = 4
    rerank_budget_s: float = 8.0  # one overall budget; after it the fusion order stands
    rerank_max_chars: int = 1500  # chunk text shown to the model per candidate

    # Position-aware blend: fusion weight by fusion rank (the rest is the rerank score)
    blend_top3: float = 0.75
    blend_top10: float = 0.60
    blend_rest: float = 0.40


@dataclass
class SearchRequest:
    """What to search and how: what a caller may ask for (every SPEC §3 parameter is a field
    with its default), and the tuning it runs with."""

    query: str
    limit: int = 10
    # Who is asking: every retrieval query keeps to the repositories this viewer may see. The
    # default sees only unrestricted repositories (code that forgets to say fails safe).
    viewer: Viewer = field(default_factory=Viewer)
    use_bm25: bool = True  # the full-text lists (BM25)
    use_vector: bool = True
    use_rerank: bool = False
    use_expansion: bool = False
    repo_ids: list[UUID] | None = None  # None: every ready repository
    # Branch names or globs ("*": every indexed branch); None: each repository's default branch
    branches: list[str] | None = None
    languages: list[str] | None = None  # e.g. ["python", "go"]; None: all
    path_globs: list[str] | None = None  # fnmatch-style: "src/**/*.py", "*_test.go"
    exclude_path_globs: list[str] | None = None  # "-file:" of the query language
    exclude_languages: list[str] | None = None  # "-lang:" of the query language
    include_tests: bool | None = None  # None: automatic (included when the query is about tests)
    include_docs: bool | None = None  # None: automatic (included when the query is about docs)
    docs_for_usage_questions: bool = True  # automatic docs also for "how do I ..." questions
    # Pages hold ``limit`` files, each with all its chunks in the answer (search.file_groups),
    # instead of ``limit`` chunks. The executor ranks chunks either way.
    group_by_file: bool = False

    # The local cross-encoder (search.ranking.cross_encoder); None: REPO_SEARCH_CROSS_ENCODER
    # decides (the API's ``use_cross_encoder``).
    cross_encoder: bool | None = None
    # How retrieval and ranking are tuned: the measured defaults unless a benchmark varies them.
    tuning: SearchTuning = field(default_factory=SearchTuning)


@dataclass
class SearchHit:
    """One chunk in the answer. Scores are None where their stage did not run for it."""

    repo_id: UUID
    repo_name: str
    file_path: str
    chunk_id: int
    chunk_index: int
    content: str
    language: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    commit: str
    is_test: bool = False
    is_doc: bool = False
    branch: str = ""  # freshness: the branch and time of the repository's live generation
    indexed_at: datetime | None = None
    branches: list[str] = field(default_factory=list)  # branches in scope holding this chunk
    bm25_score: float | None = None  # best full-text score over the queries' lists
    vector_score: float | None = None  # best cosine similarity over the queries' lists
    combined_score: float = 0.0  # the final ordering score (fusion, or the blend after rerank)
    rerank_score: float | None = None  # the model's relevance in [0, 1]
    fusion_score: float = 0.0  # the RRF score
    fusion_rank: int = 0  # 1-based rank after fusion


@dataclass
class StageTrace:
    """What one stage did: ``ran``, ``skipped`` (and why) or ``failed`` (and why)."""

    name: str
    status: StageStatus
    reason: str = ""
    ms: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)


class StageRecorder:
    """Times one stage and records its outcome (``ran`` unless told otherwise)."""

    def __init__(self, name: str) -> None:
        self.trace = StageTrace(name=name, status="ran")

    def set(self, status: StageStatus | str, reason: str = "", **detail: Any) -> None:
        self.trace.status = status  # type: ignore[assignment]
        self.trace.reason = reason
        self.trace.detail.update(detail)


def skip_stage(trace: list[StageTrace], name: str, reason: str) -> None:
    """Record that the stage ``name`` did not run, and why (the executor skips a stage it was
    not asked for without calling into it)."""
    trace.append(StageTrace(name=name, status="skipped", reason=reason))


@contextmanager
def record_stage(trace: list[StageTrace], name: str) -> Iterator[StageRecorder]:
    stage = StageRecorder(name)
    started = time.perf_counter()
    try:
        yield stage
    except Exception as exc:  # a stage's failure must never fail the search
        logger.exception("search stage %s failed", name)
        stage.set("failed", f"{type(exc).__name__}: {str(exc)[:200]}")
    finally:
        stage.trace.ms = round((time.perf_counter() - started) * 1000, 1)
        trace.append(stage.trace)


@dataclass
class ScopeApplied:
    """The filters every retrieval query used, after automatic test/doc detection."""

    repo_ids: list[UUID] | None
    languages: list[str] | None
    path_globs: list[str] | None
    include_tests: bool
    include_docs: bool
    tests_reason: str = ""  # "requested", "default", "query mentions 'pytest'"
    docs_reason: str = ""
    prefer_tests: bool = (
        False  # the query asks for tests: they rank first (search.ranking.ordering)
    )
    prefer_docs: bool = False


@dataclass
class SearchResult:
    hits: list[SearchHit]
    trace: list[StageTrace]
    total_bm25_hits: int  # distinct chunks in the full-text lists (before fusion's cut)
    total_vector_hits: int  # distinct chunks in the vector lists
    queries: list[str]  # the original query first, then the expansions used
    scope: ScopeApplied
    ms: float = 0.0
    # a list of that method stopped at ``list_depth``: more chunks match than were counted
    bm25_hits_is_lower_bound: bool = False
    vector_hits_is_lower_bound: bool = False
    # Where it was read (search.retrieval.replicas.ReadRoute.served_by): the primary or a replica,
    # how far behind, and why any replica was passed over.
    served_by: dict[str, Any] = field(default_factory=dict)

    def stage(self, name: str) -> StageTrace | None:
        return next((s for s in self.trace if s.name == name), None)


# What retrieval hands to fusion (search.ranking.fusion) and the stages after it.
@dataclass
class RankedList:
    """One retrieval list: chunk ids best first, with the list's own scores."""

    method: str  # "fulltext" | "vector"
    query_index: int  # 0 = the original query
    ranked: Sequence[tuple[int, float]]

    def weight(self, original_weight: float) -> float:
        return original_weight if self.query_index == 0 else 1.0


@dataclass
class FusedCandidate:
    chunk_id: int
    score: float
    rank: int = 0  # 1-based rank after fusion
    best_rank: int = 0  # best 1-based rank in any list
    method_scores: dict[str, float] = field(default_factory=dict)  # best score per method
