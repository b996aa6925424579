"""Chunk texts of the results the page posts back without them (it leaves ``content`` out of a
search answer to keep ``/ui/results`` requests small), read from the generation searches see."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Q

from frontend.pipeline import _int, _text
from indexing.models import Chunk, IndexedBranch, Repository


def stored_contents(
    results: Sequence[Mapping[str, Any]], repositories: Mapping[str, Repository]
) -> dict[tuple[str, str, int], str]:
    """Chunk texts for results posted without ``content`` (the page leaves it out to keep the
    request small), read from the generation searches see."""
    on_branches = any(
        repositories[key].branch != _text(item.get("branch"))
        for item in results
        if (key := _text(item.get("repo_id"))) in repositories and item.get("branch")
    )
    other = (
        {
            (str(repo_id), name): generation
            for repo_id, name, generation in IndexedBranch.objects.filter(
                repository__in=list(repositories.values()), generation__gt=0
            ).values_list("repository_id", "name", "generation")
        }
        if on_branches
        else {}
    )
    wanted = Q()
    for item in results:
        repository = repositories.get(_text(item.get("repo_id")))
        if item.get("content") is None and repository is not None:
            # A hit of another branch (a branch search): that branch's own or shared rows.
            generation = other.get((str(repository.pk), _text(item.get("branch"))))
            live = (
                Q(generation=repository.active_generation)
                if generation is None
                else Q(generation=generation) | Q(file__shared_with__generation=generation)
            )
            wanted |= live & Q(
                repository=repository,
                path=_text(item.get("file_path")),
                index=_int(item.get("chunk_index"), -1),
            )
    if not wanted:
        return {}
    rows = Chunk.objects.filter(wanted).values_list("repository_id", "path", "index", "content")
    return {(str(repo_id), path, index): content for repo_id, path, index, content in rows}
