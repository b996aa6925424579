"""Facet counts of a search: how many of its result files each repository and language holds.

Exact and regex searches count every matching file the engine found (``ExactResult.files``):
exact when their total is, a lower bound when the count stopped early. A hybrid search counts
the files of its ranked answer (the candidates it kept, ``search.exact.hybrid_pages``), which is
what it considered, not every file that holds a word: ``basis`` says which. The results page
draws them as filters that add ``repo:`` / ``lang:`` to the query.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

Basis = Literal["matching_files", "ranked_candidates"]


def facet_counts(
    files: Iterable[tuple[Any, str, str]], *, basis: Basis, is_lower_bound: bool
) -> dict[str, Any]:
    """The ``facets`` document of ``files`` ((repository id, repository name, language) per
    result file, each file once): most files first, then by name."""
    repositories: Counter[tuple[str, str]] = Counter()
    languages: Counter[str] = Counter()
    for repo_id, repo_name, language in files:
        repositories[(str(repo_id), repo_name)] += 1
        if language:
            languages[language] += 1
    return {
        "basis": basis,
        "is_lower_bound": is_lower_bound,
        "repositories": [
            {"repo_id": repo_id, "name": name, "files": count}
            for (repo_id, name), count in sorted(
                repositories.items(), key=lambda item: (-item[1], item[0][1])
            )
        ],
        "languages": [
            {"language": language, "files": count}
            for language, count in sorted(languages.items(), key=lambda item: (-item[1], item[0]))
        ],
    }
