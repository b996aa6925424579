"""``GET /api/symbols``, ``/api/symbols/definitions`` and ``/api/symbols/references`` over a real
repository indexed by the real pipeline (tree-sitter definitions and call names)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.factories import Piece, SourceDoc, indexed_repository

pytestmark = pytest.mark.django_db


def get(client: Client, url: str, **params: Any) -> tuple[int, dict[str, Any]]:
    response = client.get(url, params)
    return response.status_code, response.json()


def symbols(client: Client, **params: Any) -> list[tuple[str, str, str, str]]:
    status, body = get(client, "/api/symbols", **params)
    assert status == 200, body
    assert body["total"] == len(body["results"])
    return [(h["name"], h["container"], h["path"], h["match"]) for h in body["results"]]


def test_symbols_rank_exact_then_prefix_then_substring_then_similar(
    indexed, client: Client
) -> None:  # type: ignore[no-untyped-def]
    found = symbols(client, q="send")
    assert found[0] == ("send", "Client", "src/httpclient/client.py", "exact")
    made = symbols(client, q="make")
    assert made[0][::3] == ("make_auth", "prefix")
    auth = symbols(client, q="auth")
    assert {(n, m) for n, _, _, m in auth} >= {
        ("make_auth", "substring"),
        ("token_auth", "substring"),
    }
    # A misspelt name still finds it, as a fuzzy match, after every closer tier.
    fuzzy = symbols(client, q="tokn_auth")
    assert ("token_auth", "", "src/httpclient/client.py", "fuzzy") in fuzzy
    assert all(m == "fuzzy" for *_, m in fuzzy)
    assert symbols(client, q="nothing_named_so_at_all") == []


def test_symbol_hits_carry_location_language_and_a_link(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    _, repository = indexed
    status, body = get(client, "/api/symbols", q="Client", kind="class")
    assert status == 200
    (hit,) = body["results"]
    assert hit["name"] == hit["symbol"] == "Client"
    assert hit["kind"] == "class" and hit["language"] == "python"
    assert hit["repository"] == "acme/httpclient" and hit["repo_id"] == str(repository.pk)
    assert (hit["start_line"], hit["end_line"]) == (3, 10)  # the class with its methods
    assert hit["commit"] == repository.last_indexed_commit
    page = client.get(hit["url"], follow=True)
    assert page.status_code == 200 and b'id="L19"' in page.content and b"_transport" in page.content


def test_symbol_filters_by_language_kind_repository_and_limit(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    other = indexed_repository(
        "other/tools", [SourceDoc("lib/send.go", [Piece("func send() {}", "send")], "go")]
    )
    everywhere = {(n, p) for n, _, p, _ in symbols(client, q="send")}
    assert ("send", "lib/send.go") in everywhere and (
        "send",
        "src/httpclient/client.py",
    ) in everywhere
    assert [p for _, _, p, _ in symbols(client, q="send", lang="go")] == ["lib/send.go"]
    assert [p for _, _, p, _ in symbols(client, q="send", repo=str(other.pk))] == ["lib/send.go"]
    assert [p for _, _, p, _ in symbols(client, q="send", repo="other/tools")] == ["lib/send.go"]
    assert symbols(client, q="send", kind="method")[0][:2] == ("send", "Client")
    assert {n for n, *_ in symbols(client, q="send", kind="method")} == {"send"}
    status, body = get(client, "/api/symbols", q="auth", limit=1)
    assert status == 200 and len(body["results"]) == 1 and body["truncated"] is True


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "q"),
        ({"q": ""}, "q"),
        ({"q": "x" * 201}, "q"),
        ({"q": "two words"}, "q"),
        ({"q": "send", "limit": "0"}, "limit"),
        ({"q": "send", "limit": "many"}, "limit"),
        ({"q": "send", "lang": "l" * 65}, "lang"),
    ],
)
def test_bad_symbol_queries_are_a_400_in_the_error_shape(
    indexed, client: Client, params: dict[str, str], field: str
) -> None:  # type: ignore[no-untyped-def]
    status, body = get(client, "/api/symbols", **params)
    assert status == 400, body
    assert set(body["error"]) == {"code", "message", "details"}
    assert field in body["error"]["message"] or field in str(body["error"]["details"])


def test_a_nul_in_the_name_and_an_unknown_repository_are_refused(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/symbols", {"q": "se\x00nd"}).status_code == 400
    status, body = get(client, "/api/symbols", q="send", repo="no/such")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body = get(client, "/api/symbols/references", name="send", repo="no/such")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_an_ambiguous_repository_name_lists_the_ids(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    first = indexed_repository("twin", ["def send():\n    pass"])
    second = indexed_repository("twin", ["def send():\n    pass"])
    status, body = get(client, "/api/symbols", q="send", repo="twin")
    assert status == 400 and body["error"]["code"] == "ambiguous_repository"
    assert set(body["error"]["details"]["ids"]) == {str(first.pk), str(second.pk)}
    assert symbols(client, q="s0", repo=str(second.pk))[0][3] == "exact"


def test_sym_in_the_query_language_uses_the_same_lookup(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    response = client.post(
        "/api/search", {"query": "sym:tokn_auth", "limit": 10}, content_type="application/json"
    )
    body = response.json()
    assert response.status_code == 200 and body["mode"] == "symbol"
    assert [(h["symbol"], h["symbol_match"]) for h in body["results"]][:1] == [
        ("token_auth", "fuzzy")
    ]


def test_go_to_definition_prefers_the_same_repository_and_language(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    indexed_repository(
        "other/tools", [SourceDoc("lib/send.go", [Piece("func send() {}", "send")], "go")]
    )
    url = "/api/symbols/definitions"
    status, body = get(client, url, name="send", repo="acme/httpclient", lang="python")
    assert status == 200
    assert [(h["repository"], h["path"]) for h in body["results"]] == [
        ("acme/httpclient", "src/httpclient/client.py"),
        ("other/tools", "lib/send.go"),
    ]
    assert "def send(self, request):" in body["results"][0]["snippet"]
    status, body = get(client, url, name="send", repo="other/tools", lang="go")
    assert [h["repository"] for h in body["results"]] == ["other/tools", "acme/httpclient"]
    # Only the exact name: no prefix or similar names.
    status, body = get(client, url, name="make")
    assert status == 200 and body["results"] == []


def test_find_references_merges_calls_and_exact_identifier_matches(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, body = get(client, "/api/symbols/references", name="Client")
    assert status == 200, body
    lines = {(h["path"], h["line"], h["via"]) for h in body["results"]}
    # Calls tree-sitter recorded: Client() in the module and in the test.
    assert ("src/httpclient/client.py", 19, "call") in lines
    assert ("tests/test_client.py", 4, "call") in lines
    # Mentions that are not calls come from the text: the import, the guide.
    assert ("tests/test_client.py", 1, "text") in lines
    assert ("docs/guide.md", 3, "text") in lines
    # Not the definition itself, not other words holding it (CLIENT_DEFAULT, client_count).
    assert ("src/httpclient/client.py", 3) not in {(p, n) for p, n, _ in lines}
    assert all(h["snippet"][slice(*h["ranges"][0])] == "Client" for h in body["results"])
    assert "src/native/vec.cpp" not in {p for p, _, _ in lines}
    assert body["truncated"] is False
    status, body = get(client, "/api/symbols/references", name="Client", limit=2)
    assert len(body["results"]) == 2 and body["truncated"] is True


@pytest.mark.parametrize("name", ["", "foo.bar", "a b", "1abc", "x" * 201, "sé\x00"])
def test_references_take_one_identifier(indexed, client: Client, name: str) -> None:  # type: ignore[no-untyped-def]
    status, body = get(client, "/api/symbols/references", name=name)
    assert status == 400, body
    assert set(body["error"]) == {"code", "message", "details"}


def test_symbol_endpoints_are_declared_in_the_schema(client: Client) -> None:
    schema = client.get("/api/schema", {"format": "json"}).json()
    for path in ("/api/symbols", "/api/symbols/definitions", "/api/symbols/references"):
        responses = schema["paths"][path]["get"]["responses"]
        assert {"200", "400", "404"} <= set(responses), path
    params = {p["name"] for p in schema["paths"]["/api/symbols"]["get"]["parameters"]}
    assert {"q", "repo", "lang", "kind", "limit"} <= params


def test_an_unknown_kind_or_language_is_refused_with_the_nearest(indexed, client: Client) -> None:  # type: ignore[no-untyped-def]
    """A filter is applied or refused, never an empty answer that reads as "no such symbol"."""
    status, body = get(client, "/api/symbols", q="Client", kind="clas")
    assert status == 400
    assert "did you mean class?" in body["error"]["message"]
    assert body["error"]["details"]["field"] == "kind"
    status, body = get(client, "/api/symbols", q="Client", lang="pyton")
    assert status == 400 and body["error"]["code"] == "unknown_language"
    assert body["error"]["details"]["suggestions"][0] == "python"
    status, body = get(client, "/api/symbols/definitions", name="Client", lang="pyton")
    assert status == 400 and body["error"]["code"] == "unknown_language"
    # Another spelling of a known language is that language.
    status, body = get(client, "/api/symbols", q="Client", lang="Py", kind="Class")
    assert status == 200 and [hit["symbol"] for hit in body["results"]] == ["Client"]
