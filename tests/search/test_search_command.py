"""``manage.py search``: terminal lines, --json, errors."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.search.corpus import Piece, SourceDoc, indexed_repository

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def corpus() -> None:
    indexed_repository(
        "cli",
        [
            SourceDoc(
                "net/retry.py",
                [Piece("def retry_with_backoff(call):\n    return call()\n", "retry_with_backoff")],
            )
        ],
    )


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("search", *args, "--no-vector", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_prints_location_symbol_and_snippet() -> None:
    out, err = run("retry with backoff", "--limit", "3")
    lines = out.splitlines()
    assert lines[0] == "cli:net/retry.py:1-2  retry_with_backoff"
    assert lines[1] == "    def retry_with_backoff(call):"
    assert "# fulltext: ran" in err and "# vector: skipped (not requested)" in err


def test_json_is_the_api_document() -> None:
    out, _ = run("retry", "--json")
    body = json.loads(out)
    assert body["results"][0]["symbol"] == "retry_with_backoff"
    assert body["total_bm25_hits"] == 1 and body["trace"][0]["name"] == "scope"


def test_no_results() -> None:
    assert run("nothingmatcheshere", "--quiet") == ("no results\n", "")
    # Every mode says so, a symbol search too.
    assert run("sym:nothingdefinedhere", "--quiet") == ("no results\n", "")
    assert run('"nothingmatcheshere"', "--quiet") == ("no results\n", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["  "], "the query is empty"),
        (["a", "--limit", "0"], "--limit must be between 1 and 100"),
        (["a", "--repo", "nope"], "--repo: no repository named 'nope'"),
        (["a", "--repo", "00000000-0000-0000-0000-000000000000"], "unknown repository id(s)"),
        (["a", "--no-bm25", "--no-vector"], "use_bm25 and use_vector are both false: a hybrid"),
        # Refusals the API answers with a 4xx, from inside the search: a message, no traceback.
        (["retry branch:nope"], "no indexed repository is on branch:nope"),
    ],
)
def test_errors(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(*args)


def test_quoted_text_prints_matching_lines_as_grep_does() -> None:
    out, err = run('"return call()"')
    assert out.splitlines() == ["cli:net/retry.py:2:     return call()"]
    assert "# exact: 1 files" in err
    with pytest.raises(CommandError, match="did you mean repo:"):
        run("rpo:cli retry")


def test_repo_takes_a_name_as_well_as_an_id() -> None:
    by_name, _ = run('"return call()"', "--repo", "cli")
    assert by_name.splitlines() == ["cli:net/retry.py:2:     return call()"]
