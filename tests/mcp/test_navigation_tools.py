"""MCP ``find_symbol``, ``find_references``, ``list_files`` and ``get_file``'s ``truncated``
over a repository indexed by the real pipeline."""

from __future__ import annotations

import json
from typing import Any

import pytest

from search.mcp import navigation_tools, tools
from search.mcp.tools import ToolInputError
from tests.factories import Piece, SourceDoc, indexed_repository

pytestmark = pytest.mark.django_db


def error_of(call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    with pytest.raises(ToolInputError) as caught:
        call(*args, **kwargs)
    error: dict[str, Any] = json.loads(str(caught.value))["error"]
    assert error["valid"]
    return error


def test_find_symbol_is_compact_and_ranked(indexed) -> None:  # type: ignore[no-untyped-def]
    answer = navigation_tools.find_symbol("send")
    first = answer["definitions"][0]
    assert first == {
        "location": "src/httpclient/client.py:9-10",
        "repository": "acme/httpclient",
        "symbol": "Client.send",
        "kind": "method",
        "language": "python",
        "match": "exact",
    }
    assert set(answer["commits"]) == {"acme/httpclient"}  # the commit once, not per hit
    assert navigation_tools.find_symbol("tokn_auth")["definitions"][0]["match"] == "fuzzy"
    assert navigation_tools.find_symbol("send", lang="go")["definitions"] == []
    assert navigation_tools.find_symbol("auth", limit=1)["truncated"] is True


def test_find_references_lists_lines_with_calls_marked(indexed) -> None:  # type: ignore[no-untyped-def]
    answer = navigation_tools.find_references("Client", repo="acme/httpclient")
    refs = answer["references"]
    assert "acme/httpclient:src/httpclient/client.py:19: CLIENT_DEFAULT = Client() (call)" in refs
    assert "acme/httpclient:tests/test_client.py:1: from httpclient.client import Client" in refs
    assert answer["total"] == len(refs) and answer["truncated"] is False
    assert len(navigation_tools.find_references("Client", limit=1)["references"]) == 1


def test_list_files_by_directory_and_glob(indexed) -> None:  # type: ignore[no-untyped-def]
    _, repository = indexed
    everything = navigation_tools.list_files("acme/httpclient")
    assert everything["total"] == 6 and everything["truncated"] is False
    assert everything["files"] == sorted(everything["files"])
    assert everything["commit"] == repository.last_indexed_commit
    under = navigation_tools.list_files(str(repository.pk), path="src/httpclient/")
    assert under["files"] == ["src/httpclient/client.py", "src/httpclient/util.js"]
    assert navigation_tools.list_files("acme/httpclient", glob="*.py")["files"] == [
        "src/httpclient/client.py",
        "tests/test_client.py",
    ]
    assert navigation_tools.list_files("acme/httpclient", path="src", glob="*.cpp")["files"] == [
        "src/native/vec.cpp"
    ]


@pytest.mark.parametrize(
    ("call", "kwargs", "code"),
    [
        (navigation_tools.find_symbol, {"name": ""}, "invalid_name"),
        (navigation_tools.find_symbol, {"name": "x" * 201}, "invalid_name"),
        (navigation_tools.find_symbol, {"name": "send", "repo": "acme/nope"}, "unknown_repo"),
        (navigation_tools.find_symbol, {"name": "send", "limit": 0}, "invalid_limit"),
        (navigation_tools.find_references, {"name": "a.b"}, "invalid_name"),
        (navigation_tools.find_references, {"name": "se\x00nd"}, "invalid_name"),
        (navigation_tools.list_files, {"repo": "acme/nope"}, "unknown_repo"),
        (
            navigation_tools.list_files,
            {"repo": "acme/httpclient", "path": "../etc"},
            "invalid_path",
        ),
        (navigation_tools.list_files, {"repo": "acme/httpclient", "path": "a\x00"}, "invalid_path"),
        (navigation_tools.list_files, {"repo": "acme/httpclient", "glob": ""}, "invalid_glob"),
    ],
)
def test_bad_arguments_are_tool_errors_saying_what_is_valid(indexed, call, kwargs, code) -> None:  # type: ignore[no-untyped-def]
    assert error_of(call, **kwargs)["code"] == code


def test_a_misspelt_repository_names_the_one_meant(indexed) -> None:  # type: ignore[no-untyped-def]
    error = error_of(navigation_tools.list_files, repo="acme/httpclien")
    assert error["code"] == "unknown_repo"
    assert error["message"] == "no repository 'acme/httpclien' — did you mean 'acme/httpclient'?"


def test_get_file_says_truncated_when_the_400_line_cap_cuts_the_file(
    settings: Any, tmp_path: Any
) -> None:
    settings.REPO_SEARCH_DATA_DIR = tmp_path
    body = "\n".join(f"x_{n} = {n}" for n in range(1, 451))
    indexed_repository("acme/long", [SourceDoc("long.py", [Piece(body, "")])], clone=True)
    first = tools.get_file("acme/long", "long.py")
    assert (first["start_line"], first["end_line"], first["total_lines"]) == (1, 400, 450)
    assert first["truncated"] is True and first["next_start_line"] == 401
    rest = tools.get_file("acme/long", "long.py", start_line=first["next_start_line"])
    assert (rest["end_line"], rest["truncated"], rest["next_start_line"]) == (450, False, None)
    wide = tools.get_file("acme/long", "long.py", start_line=1, end_line=450)
    assert wide["end_line"] == 400 and wide["truncated"] is True
    asked = tools.get_file("acme/long", "long.py", start_line=1, end_line=10)
    assert asked["truncated"] is False and asked["next_start_line"] == 11  # what was asked for
