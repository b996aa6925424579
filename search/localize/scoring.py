"""How localisation evidence adds up, per file and per function.

Each piece of evidence (``Evidence``) has a kind, a strength in about 0..1 and a reason in
words; evidence inside a definition names it. A file's score, and each of its functions', is
the sum over kinds of ``KIND_WEIGHTS[kind] * (best + 0.3 * the next two)``: the best piece of a
kind counts fully and more of the same kind only a little (and a file of many chunks that all
match a little is not many times the evidence), so a file named in the issue *and* defining
a name from it *and* matching its description outranks one that only matches often.

Weights, in the order they are trusted: a stack frame (the code that ran), a path the issue
names, a definition of a name it names, the error's text, a name nothing defines used in the
file, then the hybrid search's ranks for the
description and for the names alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from search.exact.candidates import CandidateFile

FileKey = tuple[str, str, str]  # (repository id, path, branch)

KIND_WEIGHTS = {
    "frame": 1.5,
    "path": 1.5,
    "definition": 1.0,
    "error": 0.8,
    "mention": 0.7,
    "description": 1.0,
    "identifiers": 0.6,
}
MORE_OF_A_KIND = 0.3
COUNTED_OF_A_KIND = 3  # a file with many matching chunks is not many times the evidence
FUNCTIONS_PER_FILE = 5
REASONS_PER_ENTRY = 4


@dataclass(frozen=True)
class Evidence:
    kind: str  # a key of KIND_WEIGHTS
    strength: float
    reason: str
    symbol: str = ""  # the definition the evidence is in ("" for the file as a whole)
    symbol_kind: str = ""
    start_line: int = 0
    end_line: int = 0


@dataclass
class LocatedFunction:
    symbol: str
    kind: str
    start_line: int
    end_line: int
    score: float
    reasons: list[str]


@dataclass
class LocatedFile:
    repo_id: str
    repo_name: str
    path: str
    commit: str
    branch: str
    language: str
    score: float
    reasons: list[str]
    functions: list[LocatedFunction] = field(default_factory=list)


def combined(evidence: list[Evidence]) -> float:
    """The score of ``evidence`` (see the module docstring)."""
    by_kind: dict[str, list[float]] = {}
    for item in evidence:
        by_kind.setdefault(item.kind, []).append(item.strength)
    total = 0.0
    for kind, strengths in by_kind.items():
        strengths.sort(reverse=True)
        rest = sum(strengths[1:COUNTED_OF_A_KIND])
        total += KIND_WEIGHTS.get(kind, 0.5) * (strengths[0] + MORE_OF_A_KIND * rest)
    return total


def _reasons(evidence: list[Evidence]) -> list[str]:
    """The reasons, strongest first (weighted), each once."""
    ordered = sorted(evidence, key=lambda e: -KIND_WEIGHTS.get(e.kind, 0.5) * e.strength)
    return list(dict.fromkeys(e.reason for e in ordered))[:REASONS_PER_ENTRY]


class Ledger:
    """Evidence per file, in the order files were first seen (ties keep it)."""

    def __init__(self) -> None:
        self.files: dict[FileKey, CandidateFile] = {}
        self.evidence: dict[FileKey, list[Evidence]] = {}

    def add(self, key: FileKey, file: CandidateFile, evidence: Evidence) -> None:
        known = self.files.get(key)
        if known is None:
            self.files[key] = file
        elif (not known.commit and file.commit) or (not known.branch and file.branch):
            self.files[key] = replace(
                known, commit=known.commit or file.commit, branch=known.branch or file.branch
            )
        self.evidence.setdefault(key, []).append(evidence)

    def ranked(self, limit: int) -> list[LocatedFile]:
        scored = sorted(
            ((combined(ev), index, key) for index, (key, ev) in enumerate(self.evidence.items())),
            key=lambda t: (-t[0], t[1]),
        )
        return [self._located(key, score) for score, _, key in scored[:limit]]

    def _located(self, key: FileKey, score: float) -> LocatedFile:
        file = self.files[key]
        evidence = self.evidence[key]
        by_symbol: dict[str, list[Evidence]] = {}
        for item in evidence:
            if item.symbol:
                by_symbol.setdefault(item.symbol, []).append(item)
        functions = sorted(
            (
                LocatedFunction(
                    symbol=symbol,
                    kind=next((e.symbol_kind for e in items if e.symbol_kind), ""),
                    start_line=min(e.start_line for e in items),
                    end_line=max(e.end_line for e in items),
                    score=round(combined(items), 4),
                    reasons=_reasons(items),
                )
                for symbol, items in by_symbol.items()
            ),
            key=lambda f: (-f.score, f.start_line),
        )
        return LocatedFile(
            repo_id=key[0],
            repo_name=file.repo_name,
            path=file.path,
            commit=file.commit,
            branch=file.branch,
            language=file.language,
            score=round(score, 4),
            reasons=_reasons(evidence),
            functions=functions[:FUNCTIONS_PER_FILE],
        )
