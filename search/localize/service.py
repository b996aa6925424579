"""Issue localisation: the files (and the functions in them) an issue most likely needs changed.

``localize(LocalizeRequest)`` reads the issue's clues (``search.localize.extract``) and gathers
evidence as the request's viewer, inside the repositories and branches asked for:

- **path** -- a file the issue names (``pkg/mod.py``, ``pkg.mod``): its path ends with it;
- **frame** -- a stack frame's file, and the function around the frame's line;
- **definition** -- a definition whose name the issue names (``find_definitions``, exact names;
  a name defined in many files counts less in each);
- **mention** -- a file holding, exactly, a name the issue names that nothing defines (a
  setting's key, a constant, a flag);
- **error** -- a file holding the error message's constant text literally (exact search);
- **description** / **identifiers** -- the hybrid search (``SearchExecutor``) with the issue's
  title and first paragraph plus its strongest names, and with its names alone.

Evidence adds up per file and per function (``search.localize.scoring``); the answer is the
files best first, each with the functions that made it rank and the reasons, in words.
Tests and docs are left out unless asked for: an issue is fixed in the code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from uuid import UUID

from accounts.visibility import Viewer
from search.exact.candidates import CandidateFile, CandidateScope
from search.exact.engine import run_exact
from search.exact.file_names import FileNameRequest, run_file_names
from search.exact.mode_requests import SearchCall, candidate_scope, exact_request
from search.exact.pattern_logic import Term
from search.exact.query_language import SearchQuery
from search.exact.repositories import check_visible
from search.executor import SearchExecutor
from search.localize.extract import IssueClues, extract_clues
from search.localize.scoring import Evidence, Ledger, LocatedFile
from search.retrieval.db import search_cursor
from search.symbols.lookup import find_definitions
from search.types import SearchRequest, StageTrace

MAX_ISSUE_CHARS = 20_000
MAX_HYBRID_QUERY_CHARS = 1000  # the search API's limit, kept for the condensed question
MAX_IDENTIFIERS = 12
MAX_PATHS = 10
MAX_ERRORS = 3
DEFINITIONS_PER_NAME = 12
MAX_UNDEFINED = 4
FULL_WEIGHT = 3.0  # an identifier this strong (in backticks) is full evidence
FILES_PER_NAME = 100  # files with one name (``__init__.py``) looked at for a path's tail


@dataclass
class LocalizeRequest:
    issue: str
    viewer: Viewer = field(default_factory=Viewer)
    repo_ids: list[UUID] | None = None
    branches: list[str] | None = None
    limit: int = 10
    include_tests: bool = False
    include_docs: bool = False


@dataclass
class LocalizeResult:
    files: list[LocatedFile]
    clues: IssueClues
    queries: list[str]
    trace: list[StageTrace]
    ms: float


class _Run:
    """One localisation: its scope, the evidence gathered so far and the stages' trace."""

    def __init__(self, request: LocalizeRequest, executor: SearchExecutor | None) -> None:
        self.request = request
        self.executor = executor or SearchExecutor()
        self.base = SearchRequest(
            query="issue",
            limit=30,
            viewer=request.viewer,
            repo_ids=request.repo_ids,
            branches=request.branches,
            include_tests=request.include_tests,
            include_docs=request.include_docs,
            # Measured on questions, not on issues: localize's figures (bench/swebench) are
            # without it, and it would add about a second to each of the two hybrid searches.
            cross_encoder=False,
        )
        self.scope: CandidateScope = candidate_scope(SearchQuery(text=""), self.base)
        self.ledger = Ledger()
        self.trace: list[StageTrace] = []

    def wanted(self, is_test: bool, is_doc: bool) -> bool:
        return (self.request.include_tests or not is_test) and (
            self.request.include_docs or not is_doc
        )

    def stage(self, name: str, started: float, **detail: object) -> None:
        ms = round((time.perf_counter() - started) * 1000, 1)
        self.trace.append(StageTrace(name=name, status="ran", ms=ms, detail=dict(detail)))

    def add_file(self, file: CandidateFile, evidence: Evidence) -> None:
        if self.wanted(file.is_test, file.is_doc):
            # With no branch filter, or one branch named, one branch per repository is searched:
            # hybrid hits name it, definitions and exact hits may leave it blank -- one file
            # either way. Only several branches (or a glob) keep a path's branches apart.
            branches = self.request.branches or []
            several = len(branches) > 1 or any(c in b for b in branches for c in "*?[")
            branch = file.branch if several else ""
            self.ledger.add((str(file.repo_id), file.path, branch), file, evidence)

    # -- paths and frames ------------------------------------------------------------------

    def files_ending_with(self, path: str) -> list[CandidateFile]:
        """Files in scope sharing the longest tail of ``path`` -- a frame's path may start
        outside the repository (``/srv/app/shop/pool.py`` is ``src/shop/pool.py``). One look-up
        by file name; a path of several parts must share at least its file and directory, so
        another library's ``utils.py`` is not taken for this one's."""
        parts = [p for p in path.split("/") if p and p != "."]
        if not parts:
            return []
        request = FileNameRequest(
            scope=self.scope,
            words=[parts[-1]],
            globs=[],
            case_sensitive=True,
            fingerprint="localize",
            limit=FILES_PER_NAME,
        )
        shared: dict[int, list[CandidateFile]] = {}
        for hit in run_file_names(request).hits:
            count = _shared_tail(parts, hit.file.path.split("/"))
            if count:
                shared.setdefault(count, []).append(hit.file)
        if not shared:
            return []
        best = max(shared)
        return shared[best] if best >= min(2, len(parts)) else []

    def paths(self, clues: IssueClues) -> None:
        started = time.perf_counter()
        found = 0
        for mention in clues.mentions[:MAX_PATHS]:
            for candidate in mention.candidates:
                files = self.files_ending_with(candidate)
                for file in files:
                    where = f" (line {mention.line})" if mention.line else ""
                    self.add_file(
                        file,
                        Evidence(
                            "path",
                            mention.weight / len(files),
                            f"named in the issue as `{mention.text}`{where}",
                        ),
                    )
                found += len(files)
                if files:
                    break
        for frame in clues.frames[:MAX_PATHS]:
            files = self.files_ending_with(frame.path)
            for file in files:
                symbol = _enclosing(file, frame.line)
                self.add_file(
                    file,
                    Evidence(
                        "frame",
                        frame.weight / len(files),
                        f"stack frame at line {frame.line}"
                        + (f" in `{frame.function}`" if frame.function else ""),
                        *(symbol or ("", "", 0, 0)),
                    ),
                )
            found += len(files)
        self.stage("paths", started, mentions=len(clues.mentions), frames=len(clues.frames))

    # -- definitions and error text --------------------------------------------------------

    def definitions(self, clues: IssueClues) -> None:
        started = time.perf_counter()
        names = clues.identifiers[:MAX_IDENTIFIERS]
        undefined: list[str] = []  # names nothing defines: settings keys, constants, flags
        for ident in names:
            found, _ = find_definitions(
                ident.name, self.scope, limit=DEFINITIONS_PER_NAME, fuzzy=False
            )
            exact = [d for d in found if d.tier == "exact" and self.wanted(d.is_test, d.is_doc)]
            if not exact:
                if ident.weight >= 1.5 and len(undefined) < MAX_UNDEFINED:
                    undefined.append(ident.name)
                continue
            # A name defined in one place points there; one defined in many, less at each.
            # A backticked name counts fully, a name from the prose half, an error's type little.
            share = min(1.0, ident.weight / FULL_WEIGHT) / len(exact) ** 0.5
            container = ident.qualified.rsplit(".", 2)[-2] if "." in ident.qualified else ""
            for d in exact:
                bonus = 1.5 if container and d.container.endswith(container) else 1.0
                file = CandidateFile(
                    0, d.repo_id, d.repo_name, d.repo_url, d.commit, d.path, d.language,
                    d.is_test, d.is_doc, d.branch,
                )  # fmt: skip
                self.add_file(
                    file,
                    Evidence(
                        "definition",
                        share * bonus,
                        f"defines `{d.name}` named in the issue",
                        d.symbol,
                        d.kind,
                        d.start_line,
                        d.end_line,
                    ),
                )
        self.stage("definitions", started, names=[i.name for i in names])
        started = time.perf_counter()
        for name in undefined:
            self.literal(name, "mention", f"uses `{name}` named in the issue")
        self.stage("mentions", started, names=undefined)

    def literal(self, text: str, kind: str, reason: str) -> None:
        """Evidence for the files holding ``text`` exactly (case-sensitive), shared among them."""
        term = Term("literal", text, 0)
        call = SearchCall(replace(self.base, limit=20), context_lines=0)
        request = exact_request(SearchQuery(text=text, case_sensitive=True), [term], call)
        request.budget_ms = min(request.budget_ms, 3000)
        result = run_exact(request)
        hits = [h for h in result.hits if self.wanted(h.file.is_test, h.file.is_doc)]
        for hit in hits:
            line = hit.matches[0].line if hit.matches else 0
            symbol = _enclosing(hit.file, line) if line else None
            self.add_file(
                hit.file,
                Evidence(
                    kind,
                    1.0 / len(hits),
                    f"{reason} (line {line})",
                    *(symbol or ("", "", 0, 0)),
                ),
            )

    def errors(self, clues: IssueClues) -> None:
        started = time.perf_counter()
        for error in [e for e in clues.errors if e.literal][:MAX_ERRORS]:
            self.literal(error.literal, "error", f"holds the error text “{error.literal}”")
        self.stage("error_text", started, errors=len(clues.errors))

    # -- meaning ---------------------------------------------------------------------------

    def hybrid(self, kind: str, query: str, weight: float) -> None:
        started = time.perf_counter()
        result = self.executor.run(replace(self.base, query=query[:MAX_HYBRID_QUERY_CHARS]))
        for rank, hit in enumerate(result.hits, start=1):
            file = CandidateFile(
                0, hit.repo_id, hit.repo_name, "", hit.commit, hit.file_path, hit.language,
                hit.is_test, hit.is_doc, hit.branch,
            )  # fmt: skip
            what = "matches the description" if kind == "description" else "uses the names"
            self.add_file(
                file,
                Evidence(
                    kind,
                    weight / (1 + (rank - 1) / 3),
                    f"{what} (hybrid rank {rank})",
                    hit.symbol,
                    hit.kind,
                    hit.start_line,
                    hit.end_line,
                ),
            )
        self.stage(kind, started, query=query[:200], hits=len(result.hits))


def _shared_tail(wanted: list[str], parts: list[str]) -> int:
    """How many path parts ``wanted`` and ``parts`` share at their ends."""
    count = 0
    for a, b in zip(reversed(wanted), reversed(parts), strict=False):
        if a != b:
            break
        count += 1
    return count


_ENCLOSING_SQL = """
    SELECT c.symbol, c.kind, c.start_line, c.end_line
    FROM indexing_chunk c
    WHERE c.file_id = %s AND c.symbol <> '' AND c.start_line <= %s AND c.end_line >= %s
    ORDER BY c.end_line - c.start_line
    LIMIT 1
"""


def _enclosing(file: CandidateFile, line: int) -> tuple[str, str, int, int] | None:
    """The innermost definition around ``line`` of ``file`` (the version searched)."""
    with search_cursor(2000) as cursor:
        cursor.execute(_ENCLOSING_SQL, [file.file_id, line, line])
        row = cursor.fetchone()
    return (str(row[0]), str(row[1]), int(row[2]), int(row[3])) if row else None


def condensed_query(clues: IssueClues) -> str:
    """The issue as one question the hybrid search can take: its summary and strongest names,
    within the search API's query length."""
    names = " ".join(i.qualified for i in clues.identifiers[:6])
    room = MAX_HYBRID_QUERY_CHARS - len(names) - 1
    return f"{clues.summary[: max(room, 0)]} {names}".strip()


def localize(request: LocalizeRequest, executor: SearchExecutor | None = None) -> LocalizeResult:
    """The files of ``request``'s scope most likely to need a change for ``request.issue``.
    Raises ``UnknownRepositories`` (ids the viewer may not see) and ``UnknownBranch``."""
    started = time.perf_counter()
    check_visible(request.repo_ids, request.viewer)
    # PostgreSQL text cannot hold NUL: a pasted binary fragment is read without it.
    clues = extract_clues(request.issue.replace("\x00", " "))
    run = _Run(request, executor)
    queries: list[str] = []
    if run.scope.repo_ids:
        run.paths(clues)
        run.definitions(clues)
        run.errors(clues)
        question = condensed_query(clues)
        if question:
            queries.append(question)
            run.hybrid("description", question, 1.0)
        names = " ".join(i.name for i in clues.identifiers[:8])
        if names and names != question:
            queries.append(names)
            run.hybrid("identifiers", names, 0.5)
    files = run.ledger.ranked(request.limit)
    return LocalizeResult(
        files=files,
        clues=clues,
        queries=queries,
        trace=run.trace,
        ms=round((time.perf_counter() - started) * 1000, 1),
    )
