"""The names the pipeline's tasks are registered and sent under (``indexing.enqueue``,
``indexing.services.recovery``); each is the ``name=`` of its task in ``indexing/tasks/``."""

from __future__ import annotations

FETCH = "indexing.tasks.git.fetch_repository"
INDEX = "indexing.tasks.index.index_repository"
EMBED = "indexing.tasks.embed.embed_repository"
POLL = "indexing.tasks.polling.poll_repository"
