"""A new web process gets ready for its first search as it starts: beside the first requests it
builds the full-text loops and loads the built-in models its searches run, so ``/api/health``
says they are loaded before any search, and a model that is off is not loaded at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# The server's module, imported as uvicorn imports it; the warm-up thread is then waited for.
SCRIPT = """
import json, threading
import reposearch.asgi
for thread in threading.enumerate():
    if thread.name == "warm-up-search":
        thread.join(300)
from llm import health
status = health.model_status()
print(json.dumps([status["embedding"]["loaded"], status["cross_encoder"]["loaded"]]))
"""


@pytest.mark.parametrize(("cross_encoder", "loaded"), [("1", [True, True]), ("0", [True, False])])
def test_a_new_web_process_loads_its_models_before_any_search(
    cross_encoder: str, loaded: list[bool]
) -> None:
    env = {
        **os.environ,
        "REPO_SEARCH_LOAD_MODELS_AT_START": "1",
        "REPO_SEARCH_CROSS_ENCODER": cross_encoder,
    }
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, check=True, timeout=600)  # fmt: skip
    assert json.loads(out.stdout.strip().splitlines()[-1]) == loaded


def test_without_it_the_models_wait_for_the_first_search() -> None:
    env = {**os.environ, "REPO_SEARCH_LOAD_MODELS_AT_START": "0", "REPO_SEARCH_CROSS_ENCODER": "1"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, check=True, timeout=600)  # fmt: skip
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, False]
