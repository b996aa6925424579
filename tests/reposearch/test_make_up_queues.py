"""``make up`` never lets a new repository wait behind other repositories' embedding.

A stack of this module's own (``python -m reposearch.embedded_stack up``, its real workers): two
repositories of 5,000+ chunks each are added and embed (before, they took both of the worker's
processes); a small repository B added then is cloned, indexed and found by full text while they
still embed, and, the embed worker's time being shared slice by slice, B's vectors are done
long before theirs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo
from tests.make_up_stack import Stack, make_up, user_environment

pytestmark = pytest.mark.timeout(900)

FILES_A, FUNCTIONS_PER_FILE = 260, 20  # 5,200 function chunks


def _large_repository_files(tag: str) -> dict[str, str]:
    files = {}
    for f in range(FILES_A):
        body = "\n\n".join(
            f"def {tag}_{f}_{n}(value):\n"
            f'    """Step {n} of stage {f}."""\n'
            f"    total = value * {n + 1} + {f}\n"
            f"    return total - {n}\n"
            for n in range(FUNCTIONS_PER_FILE)
        )
        files[f"pkg/stage_{f:03d}.py"] = body + "\n"
    return files


SMALL_FILES = {
    "bravo/marker.py": "def quokka_marker_bravo():\n    return 'found while the other embeds'\n",
    "README.md": "# bravo\n",
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    env = user_environment()
    env["REPO_SEARCH_ALLOW_PRIVATE_HOSTS"] = "1"  # the git server is on 127.0.0.1
    env["REPO_SEARCH_EMBED_SLICE_SECS"] = "3"  # slices short enough for a test to see them turn
    with make_up(tmp_path_factory.mktemp("make-up-queues"), env) as running:
        yield running


def _job(stack: Stack, job_id: int) -> dict[str, Any]:
    return stack.api("GET", f"/api/jobs/{job_id}")  # type: ignore[no-any-return]


def _found(stack: Stack, query: str, repository: str) -> list[dict[str, Any]]:
    answer = stack.api("POST", "/api/search", {"query": query, "repos": [repository]})
    return answer["results"]  # type: ignore[no-any-return]


def test_a_new_repository_is_searchable_while_others_embed(stack: Stack, tmp_path: Path) -> None:
    repos = {}
    for tag in ("alpha", "gamma"):
        repos[f"team/{tag}.git"] = init_bare_repo(str(tmp_path / f"{tag}.git"))
        commit_files(repos[f"team/{tag}.git"], _large_repository_files(tag))
    repos["team/small.git"] = init_bare_repo(str(tmp_path / "small.git"))
    commit_files(repos["team/small.git"], SMALL_FILES)
    with GitHttpServer(repos) as server:
        large = [
            stack.api("POST", "/api/repos", {"url": server.url(f"team/{tag}.git")})
            for tag in ("alpha", "gamma")
        ]
        large_jobs = [added["job"]["id"] for added in large]
        for job_id in large_jobs:
            stack.wait_for(
                lambda job_id=job_id: _job(stack, job_id)["state"] == "embedding",
                "a large repository embedding",
                300,
            )
            assert _job(stack, job_id)["chunks_total"] >= 5000

        b = stack.api("POST", "/api/repos", {"url": server.url("team/small.git")})
        b_job = b["job"]["id"]
        # B's clone and full text do not wait for the embedding: the embed queue has its own
        # worker, and 10,400 chunks take minutes to embed on these cores.
        stack.wait_for(
            lambda: _job(stack, b_job)["state"] in ("embedding", "done"), "B indexed", 120
        )
        hits = _found(stack, '"quokka_marker_bravo"', b["name"])
        assert [hit["file_path"] for hit in hits] == ["bravo/marker.py"]
        for job_id in large_jobs:
            embedding = _job(stack, job_id)
            assert embedding["state"] == "embedding", embedding
            assert embedding["chunks_embedded"] < embedding["chunks_total"]

        # The large ones give way slice by slice: B's few vectors are done long before theirs.
        stack.wait_for(lambda: _job(stack, b_job)["state"] == "done", "B embedded", 120)
        b_done = _job(stack, b_job)
        assert b_done["chunks_embedded"] == b_done["chunks_total"] > 0
        for job_id in large_jobs:
            embedding = _job(stack, job_id)
            assert embedding["state"] == "embedding", embedding
            # Its estimate: the chunks left at its measured pace, shared with the other one;
            # never a few seconds for minutes of work (5,000 chunks are not embedded in under
            # 20 s on any CPU we run on).
            left = embedding["chunks_total"] - embedding["chunks_embedded"]
            assert embedding["stage_eta_seconds"] is not None
            assert embedding["stage_eta_seconds"] > left / 250

        for added in large:  # stop their embedding: nothing left running
            stack.api("DELETE", f"/api/repos/{added['id']}")
