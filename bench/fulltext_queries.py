"""The broad full-text query set: five classes of 1-5 words, drawn (seeded) from the corpus.

    .venv/bin/python bench/fulltext_queries.py [--per-class 45] [--seed 32]
        [--out bench/fulltext_queries.json]

Reads the synthetic corpus in the bench database (``bench/build_synthetic_corpus.py``): the
base repository's chunks (``synthetic-000``, Django's source; the copies hold the same words)
and every live generation's term postings (a term's document frequency over the corpus). The
classes, ``--per-class`` queries each, every query 1-5 words (an identifier is one word; what
the product's parser makes of it -- split words and whole form -- is recorded as ``terms``):

- **identifier**: real identifiers of the code (snake_case, camelCase, dotted names taken
  from the chunks' text and their symbols), one per query, every third query two of them;
- **common**: 1-4 words among the 150 most frequent terms (``self``, ``return``, ``if``...);
- **prose**: a run of 3-5 words of an evaluation question of 5 words or more
  (``bench/eval/*-queries.json``; one word at least in the corpus);
- **rare**: 1-3 words in at most ``RARE_DF`` chunks (a word of one base chunk is in its ~90
  copies);
- **multi**: 4-5 distinct words of one chunk's text (they co-occur, as when a reader types
  words they saw), common and rare mixed.

The same corpus and seed give the same file. ``bench/fulltext_vs_tantivy.py --queries broad``
reads it (the committed copy: made at the commit its ``made_at_commit`` names).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
from pathlib import Path
from typing import Any

from bench_db import ROOT, bench_database

OUT = ROOT / "bench" / "fulltext_queries.json"
CLASSES = ("identifier", "common", "prose", "rare", "multi")
RARE_DF = 300
COMMON_TOP = 150
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_COMPOUND = re.compile(r"[a-z0-9]_[a-z0-9]|[a-z][A-Z]|\w\.\w")
_WORD = re.compile(r"[a-z]{3,}")


def document_frequencies() -> dict[str, int]:
    """Each term's document frequency over every ready repository's live generation."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "WITH live AS (SELECT id, active_generation AS g FROM indexing_repository"
            "              WHERE status = 'ready'),"
            " t AS (SELECT p.term, sum(p.df) AS df FROM search_termpostings p"
            "       JOIN live ON live.id = p.repository_id AND live.g = p.generation"
            "       GROUP BY p.term"
            "       UNION ALL"
            "       SELECT u.term, sum(u.df) FROM search_termbucket b"
            "       JOIN live ON live.id = b.repository_id AND live.g = b.generation"
            "       CROSS JOIN LATERAL unnest(b.terms, b.dfs) AS u(term, df)"
            "       GROUP BY u.term)"
            " SELECT term, sum(df) FROM t GROUP BY term"
        )
        return {term: int(df) for term, df in cursor.fetchall()}


def base_chunks() -> list[tuple[str, str]]:
    """(symbol, content) of the base repository's live chunks, in id order."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.symbol, c.content FROM indexing_chunk c JOIN indexing_repository r"
            " ON r.id = c.repository_id AND c.generation = r.active_generation"
            " WHERE r.name = (SELECT min(name) FROM indexing_repository WHERE status = 'ready')"
            " ORDER BY c.id"
        )
        return [(symbol or "", content) for symbol, content in cursor.fetchall()]


def eval_questions() -> list[str]:
    """Every evaluation question, file by file in name order."""
    questions = []
    for path in sorted((ROOT / "bench" / "eval").glob("*-queries.json")):
        questions += [q["query"] for q in json.loads(path.read_text())["queries"]]
    return questions


def identifiers(chunks: list[tuple[str, str]], df: dict[str, int]) -> list[str]:
    """Distinct compound identifiers of the chunks (symbols and names in their text) whose
    whole form the corpus holds, sorted."""
    from search.retrieval.query import parse_query

    found: set[str] = set()
    for symbol, content in chunks:
        for name in [symbol, *_IDENTIFIER.findall(content)]:
            name = name.strip("_.")
            if 6 <= len(name) <= 40 and _COMPOUND.search(name) and "__" not in name:
                found.add(name)
    return sorted(n for n in found if all(df.get(t, 0) for t in parse_query(n).terms))


def words_of(content: str, df: dict[str, int]) -> list[str]:
    """The distinct words (identifiers split, no whole forms) of ``content`` the corpus holds."""
    from indexing.identifiers import split_identifier

    found = {w for name in _IDENTIFIER.findall(content) for w in split_identifier(name)}
    return sorted(w for w in found if _WORD.fullmatch(w) and w in df)


def build(per_class: int, seed: int, df: dict[str, int]) -> dict[str, list[str]]:
    """``per_class`` queries of each class (see the module docstring)."""
    from search.retrieval.query import parse_query

    rng = random.Random(seed)
    chunks = base_chunks()
    vocabulary = sorted({w for _symbol, content in chunks for w in words_of(content, df)})
    common = sorted(vocabulary, key=lambda t: (-df[t], t))[:COMMON_TOP]
    rare = [t for t in vocabulary if df[t] <= RARE_DF and len(t) >= 5]
    names = identifiers(chunks, df)
    queries: dict[str, list[str]] = {c: [] for c in CLASSES}

    attempts = dict.fromkeys(CLASSES, 0)

    def add(group: str, query: str) -> None:
        if query and query not in queries[group]:
            queries[group].append(query)

    def wanting(group: str) -> bool:
        """Whether ``group`` needs more queries (a tiny corpus may not hold enough distinct)."""
        attempts[group] += 1
        return len(queries[group]) < per_class and attempts[group] <= 100 * per_class

    while wanting("identifier"):
        two = len(queries["identifier"]) % 3 == 2
        add("identifier", " ".join(rng.sample(names, min(2 if two else 1, len(names)))))
    while wanting("common"):
        add("common", " ".join(rng.sample(common, min(rng.randint(1, 4), len(common)))))
    questions = [q for q in eval_questions() if len(q.split()) >= 5]
    while wanting("prose"):
        words = re.findall(r"[A-Za-z0-9_']+", rng.choice(questions))
        size = rng.randint(3, 5)
        start = rng.randint(0, len(words) - size)
        run = " ".join(words[start : start + size])
        if any(df.get(t) for t in parse_query(run).terms):
            add("prose", run)
    while wanting("rare"):
        add("rare", " ".join(rng.sample(rare, min(rng.randint(1, 3), len(rare)))))
    while wanting("multi"):
        words = words_of(rng.choice(chunks)[1], df)
        if len(words) >= 5:
            add("multi", " ".join(rng.sample(words, rng.randint(4, 5))))
    return queries


def describe(
    queries: dict[str, list[str]], per_class: int, seed: int, df: dict[str, int]
) -> dict[str, Any]:
    """The file's contents: how it was made, and each query with its words' figures."""
    from search.retrieval.query import parse_query

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    return {
        "made_by": "bench/fulltext_queries.py",
        "made_at_commit": commit,
        "per_class": per_class,
        "seed": seed,
        "rare_df_at_most": RARE_DF,
        "common_top": COMMON_TOP,
        "classes": {
            group: [
                {
                    "query": query,
                    "words": len(query.split()),
                    "terms": len(parse_query(query).terms),
                    "matches_at_most": sum(df.get(t, 0) for t in parse_query(query).terms),
                }
                for query in found
            ]
            for group, found in queries.items()
        },
    }


def load(path: Path = OUT) -> dict[str, list[str]]:
    """The committed query set: class -> queries."""
    data = json.loads(path.read_text())
    return {group: [q["query"] for q in rows] for group, rows in data["classes"].items() if rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-class", type=int, default=45)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with bench_database():
        df = document_frequencies()
        made = describe(build(args.per_class, args.seed, df), args.per_class, args.seed, df)
    args.out.write_text(json.dumps(made, indent=1) + "\n")
    counts = {group: len(rows) for group, rows in made["classes"].items()}
    print(f"wrote {args.out}: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
