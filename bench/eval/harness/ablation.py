"""The evaluation harness: run a labelled query set through search configurations (an ablation).

    from bench.eval.harness.ablation import ABLATION, run_ablation
    report = run_ablation(query_set, repo_ids=[repo.pk], k=5, with_llm=False)
    print(format_report(report))

Each configuration (request and tuning overrides) runs through the ``SearchExecutor`` the API
uses: what is measured is what users get. Those that need a chat model run only when asked for
and one is configured; skipped, or with their stage not run, the report says why instead of
presenting fusion-only numbers under their name.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from bench.eval.harness.metrics import (
    Metrics,
    QueryOutcome,
    ResultSlot,
    compute_metrics,
    first_hit_rank,
)
from bench.eval.harness.queries import QuerySet

if TYPE_CHECKING:
    from accounts.visibility import Viewer

NO_SCOPE = {"include_tests": True, "include_docs": True}


@dataclass(frozen=True)
class Configuration:
    name: str
    overrides: dict[str, Any]
    needs_chat: bool = False
    llm_stage: str = ""  # the trace stage that must have run for the numbers to mean anything
    description: str = ""
    # Retrieve through ask's context builder instead (HyDE, call-graph expansion) with these options.
    ask_options: dict[str, Any] | None = None
    whole_context: bool = False  # score every snippet ask would give the model, not the first k


ABLATION: tuple[Configuration, ...] = (
    Configuration("fulltext", {"use_vector": False, **NO_SCOPE}, description="BM25 full-text only"),
    Configuration("vector", {"use_bm25": False, **NO_SCOPE}, description="HNSW cosine only"),
    Configuration("hybrid", dict(NO_SCOPE), description="BM25 + vector, RRF, tests/docs kept"),
    Configuration(
        "fulltext+scope",
        {"use_vector": False, "include_tests": None, "include_docs": None},
        description="BM25 only, automatic scope",
    ),
    Configuration(
        "vector+scope",
        {"use_bm25": False, "include_tests": None, "include_docs": None},
        description="vector only, automatic scope",
    ),
    Configuration(
        "hybrid+scope",
        {"include_tests": None, "include_docs": None},
        description="hybrid, tests/docs out unless the query asks",
    ),
    Configuration(
        "+learned",
        {"include_tests": None, "include_docs": None, "learned_fusion": True},
        description="hybrid+scope, the fused candidates ordered by the learned model",
    ),
    Configuration(
        "+rules",
        {"include_tests": None, "include_docs": None, "learned_fusion": False},
        description="hybrid+scope, the hand-set fusion rules only (learned fusion off)",
    ),
    Configuration(
        "+cross-encoder",
        {"include_tests": None, "include_docs": None, "cross_encoder": True},
        # No llm_stage: an identifier query skips it by design, an outcome, not a fault.
        description="hybrid+scope, the best 10 reordered by the local cross-encoder",
    ),
    Configuration(
        "no-cross-encoder",
        {"include_tests": None, "include_docs": None, "cross_encoder": False},
        description="hybrid+scope without the local cross-encoder",
    ),
    Configuration(
        "+callgraph",
        {"include_tests": None, "include_docs": None},
        # No llm_stage: "no call leads to an indexed definition" is an outcome, not a fault.
        ask_options={"expand": True},
        whole_context=True,
        description="hybrid+scope hits + the definitions they call (whole ask context)",
    ),
    Configuration(
        "+hyde",
        {"include_tests": None, "include_docs": None},
        needs_chat=True,
        llm_stage="hyde",
        ask_options={"hyde": True},
        description="hybrid+scope fused with a hypothetical snippet's vector list",
    ),
    Configuration(
        "+expansion",
        {"use_expansion": True, "include_tests": None, "include_docs": None},
        needs_chat=True,
        llm_stage="expansion",
        description="hybrid+scope, 2 LLM phrasings",
    ),
    Configuration(
        "+rerank",
        {"use_expansion": True, "use_rerank": True, "include_tests": None, "include_docs": None},
        needs_chat=True,
        llm_stage="rerank",
        description="+expansion, LLM rerank and blend",
    ),
)


@dataclass
class ConfigurationReport:
    name: str
    description: str
    metrics: Metrics | None = None
    skipped: str = ""  # why the configuration did not run
    # Configurations scored on ask's whole context: recall over every snippet, and how many.
    context_recall: float | None = None
    context_size: float | None = None
    warnings: list[str] = field(default_factory=list)
    outcomes: list[QueryOutcome] = field(default_factory=list)

    def as_dict(self, include_queries: bool = True, k: int | None = None) -> dict[str, Any]:
        """The report as JSON; with ``k``, each query also gets the rank of its first hit."""
        data: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "skipped": self.skipped or None,
            "warnings": self.warnings,
            "metrics": self.metrics.as_dict() if self.metrics else None,
            "context_recall": self.context_recall,
            "context_size": self.context_size,
        }
        if include_queries:
            data["queries"] = [
                {
                    "id": outcome.query.id,
                    "kind": outcome.query.kind,
                    "ms": round(outcome.ms, 2),
                    **({"rank": first_hit_rank(outcome, k)} if k is not None else {}),
                    "results": [
                        f"{slot.path}:{slot.start_line}-{slot.end_line}"
                        + (f" {slot.symbol}" if slot.symbol else "")
                        for slot in outcome.slots
                    ],
                }
                for outcome in self.outcomes
            ]
        return data


@dataclass
class AblationReport:
    k: int
    queries: int
    configurations: list[ConfigurationReport]
    context: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "queries": self.queries,
            "context": self.context,
            "configurations": [c.as_dict(k=self.k) for c in self.configurations],
        }


SearchFunction = Callable[[Any], Any]


def _field_names(cls: Any) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def build_request(
    query: str,
    configuration: Configuration,
    *,
    k: int,
    repo_ids: Sequence[UUID] | None,
    viewer: Viewer | None = None,
) -> Any:
    """The ``SearchRequest`` for one query under one configuration, as ``viewer`` sees the
    repositories (default: unrestricted ones only; ``bench/eval/run.py`` sees everything).
    A configuration names request and tuning fields alike (``SearchTuning``'s go there)."""
    from search import contract
    from search.types import SearchRequest, SearchTuning

    tuned = {n: v for n, v in configuration.overrides.items() if n in _field_names(SearchTuning)}
    rest = {n: v for n, v in configuration.overrides.items() if n not in tuned}
    unknown = set(rest) - _field_names(SearchRequest)
    if unknown:
        raise ValueError(f"{configuration.name}: SearchRequest has no field(s) {sorted(unknown)}")
    fields = {"query": query, "limit": k, "repo_ids": repo_ids}
    return contract.search_request(fields, viewer=viewer, tuning=SearchTuning(**tuned), **rest)


def _slots(result: Any, home: UUID | None = None) -> tuple[ResultSlot, ...]:
    """The hits as result slots; with ``home``, a hit of another repository is ``elsewhere``."""
    return tuple(
        ResultSlot(
            path=hit.file_path,
            start_line=hit.start_line,
            end_line=hit.end_line,
            symbol=hit.symbol or "",
            is_test=bool(getattr(hit, "is_test", False)),
            is_doc=bool(getattr(hit, "is_doc", False)),
            elsewhere=home is not None and hit.repo_id != home,
        )
        for hit in result.hits
    )


def _ask_context(
    question: str,
    configuration: Configuration,
    *,
    k: int,
    repo_ids: Sequence[UUID] | None,
    viewer: Viewer | None = None,
    home: UUID | None = None,
) -> tuple[tuple[ResultSlot, ...], list[Any]]:
    """What ask would give the model for ``question``, as result slots, and its trace."""
    from bench.eval.harness.ask_checks import retrieve_for_evaluation

    snippets, trace = retrieve_for_evaluation(
        question,
        k=k,
        repo_ids=list(repo_ids) if repo_ids else None,
        viewer=viewer,
        **(configuration.ask_options or {}),
    )
    slots = tuple(
        ResultSlot(
            path=snippet.path,
            start_line=snippet.start_line,
            end_line=snippet.end_line,
            symbol=snippet.symbol or "",
            is_test=snippet.is_test,
            is_doc=False,
            elsewhere=home is not None and snippet.repo_id != home,
        )
        for snippet in snippets
    )
    return (slots if configuration.whole_context else slots[:k]), trace


def required_stages(configuration: Configuration) -> list[str]:
    """Trace stages that must run for the configuration's numbers to mean what its name says."""
    stages = []
    if configuration.overrides.get("use_bm25", True):
        stages.append("fulltext")
    if configuration.overrides.get("use_vector", True):
        stages.append("vector")
    if configuration.llm_stage:
        stages.append(configuration.llm_stage)
    return stages


def _stage_problem(result: Any, stage_name: str) -> str | None:
    """Why a stage did not run for this query, or None when it ran."""
    if isinstance(result, list):  # an ask context's trace
        stage = next((item for item in result if item.name == stage_name), None)
    else:
        stage = result.stage(stage_name) if hasattr(result, "stage") else None
    if stage is None:
        return f"no {stage_name!r} stage in the trace"
    if stage.status != "ran":
        reason = (stage.reason or "no reason given")[:200]
        return f"{stage_name} {stage.status}: {reason}"
    return None


def run_configuration(
    configuration: Configuration,
    query_set: QuerySet,
    *,
    k: int,
    repo_ids: Sequence[UUID] | None,
    search: SearchFunction,
    viewer: Viewer | None = None,
    home: UUID | None = None,
) -> ConfigurationReport:
    """Every query of the set under one configuration. ``home``: the repository the questions
    were written for, when the search spans others too (their hits never count)."""
    report = ConfigurationReport(configuration.name, configuration.description)
    problems: dict[str, int] = {}
    for query in query_set.queries:
        started = time.perf_counter()
        if configuration.ask_options is not None:
            slots, result = _ask_context(
                query.query, configuration, k=k, repo_ids=repo_ids, viewer=viewer, home=home
            )
        else:
            request = build_request(
                query.query, configuration, k=k, repo_ids=repo_ids, viewer=viewer
            )
            result = search(request)
            slots = _slots(result, home)[:k]
        elapsed_ms = (time.perf_counter() - started) * 1000
        report.outcomes.append(QueryOutcome(query, slots, elapsed_ms))
        for stage_name in required_stages(configuration):
            problem = _stage_problem(result, stage_name)
            if problem:
                problems[problem] = problems.get(problem, 0) + 1
    report.metrics = compute_metrics(report.outcomes, k)
    if configuration.whole_context and report.outcomes:
        widest = max(len(outcome.slots) for outcome in report.outcomes) or 1
        report.context_recall = compute_metrics(report.outcomes, widest).recall_at_k
        report.context_size = sum(len(o.slots) for o in report.outcomes) / len(report.outcomes)
    for problem, count in sorted(problems.items(), key=lambda item: -item[1]):
        report.warnings.append(f"{count}/{len(query_set.queries)} queries: {problem}")
    return report


def chat_unavailable_reason() -> str | None:
    """Why the LLM configurations cannot run, or None when a chat model is configured."""
    try:
        from llm import get_chat

        chat = get_chat()
    except Exception as error:  # a broken model configuration is a reason, not a crash
        return f"chat model not usable: {error}"
    if not getattr(chat, "available", False):
        return "no chat model configured"
    return None


def _forget_scores() -> None:
    from search.ranking import cross_encoder
    from search.retrieval import vector_stage

    cross_encoder.clear_cache()
    vector_stage.clear_query_vectors()


def run_ablation(
    query_set: QuerySet,
    *,
    repo_ids: Sequence[UUID] | None,
    k: int = 5,
    with_llm: bool = False,
    configurations: Sequence[Configuration] = ABLATION,
    search: SearchFunction | None = None,
    warmup: bool = True,
    on_progress: Callable[[str], None] | None = None,
    viewer: Viewer | None = None,
    home: UUID | None = None,
) -> AblationReport:
    """Run every configuration over the query set; LLM ones only ``with_llm`` and a chat model.
    Searches see what ``viewer`` sees (default: unrestricted repositories only); ``home`` as in
    ``run_configuration``."""
    if search is None:
        from search.executor import SearchExecutor

        search = SearchExecutor().run
    llm_reason: str | None = None
    if any(c.needs_chat for c in configurations):
        llm_reason = "--with-llm not given" if not with_llm else chat_unavailable_reason()
    if warmup and query_set.queries:
        # Loads the embedding model and warms caches, so the first query's latency is fair.
        first = query_set.queries[0].query
        search(build_request(first, configurations[0], k=k, repo_ids=repo_ids, viewer=viewer))
        warm = Configuration("warmup", {})
        search(build_request(first, warm, k=k, repo_ids=repo_ids, viewer=viewer))
    reports = []
    for configuration in configurations:
        if configuration.needs_chat and llm_reason:
            reports.append(
                ConfigurationReport(
                    configuration.name, configuration.description, skipped=llm_reason
                )
            )
            continue
        if on_progress:
            on_progress(configuration.name)
        _forget_scores()  # each configuration pays its own query embeddings and model scores
        reports.append(
            run_configuration(
                configuration,
                query_set,
                k=k,
                repo_ids=repo_ids,
                search=search,
                viewer=viewer,
                home=home,
            )
        )
    return AblationReport(k=k, queries=len(query_set.queries), configurations=reports)
