"""A restricted repository leaks nowhere a search reads: full-text, vector, hybrid, expansion,
exact, regex, symbol search, totals, counts, cursors, ``repo:`` filters, unknown-id errors,
ask (its prompt, HyDE and call-graph expansion) and the MCP tools -- for an account outside its
group and for the default ``Viewer()``; a member of the group finds it (so every check can
fail). The API, the pages and the commands are in ``test_visibility_api.py``."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from accounts.visibility import Viewer
from indexing.models import Chunk
from search import contract
from search.ask.callgraph import expand_call_graph
from search.ask.context import load_snippets
from search.ask.hyde import run_hyde
from search.ask.service import AskRequest, answer_question
from search.exact.errors import QueryRejected
from search.mcp import tools
from search.retrieval.scope import UnknownRepositories
from search.router import SearchCall, SearchOutcome, run_search
from tests.accounts.visibility_corpus import SECRET, Corpus, leaks

OUTSIDERS = ("outsider", "anonymous")


def viewer_of(corpus: Corpus, who: str) -> Viewer:
    return {"member": corpus.as_member, "outsider": corpus.as_outsider, "anonymous": Viewer()}[who]


def search(viewer: Viewer, query: str, **fields: Any) -> SearchOutcome:
    request = contract.search_request({"query": query, **fields}, viewer=viewer)
    return run_search(SearchCall(request))


def repositories_of(outcome: SearchOutcome) -> set[str]:
    if outcome.hybrid is not None:
        return {hit.repo_name for hit in outcome.hybrid.hits}
    if outcome.definitions is not None:
        return {hit.repo_name for hit in outcome.definitions}
    assert outcome.exact is not None
    return {hit.file.repo_name for hit in outcome.exact.hits}


@pytest.mark.parametrize(
    ("stages", "query"),
    [
        ({"use_vector": False}, "zanzibar quokka token"),  # full text
        ({"use_bm25": False}, "vault token for the connection pool"),  # vector
        ({}, "zanzibar quokka token vault"),  # hybrid
    ],
    ids=["fulltext", "vector", "hybrid"],
)
def test_ranked_search_and_its_totals_keep_to_what_the_viewer_may_see(
    corpus: Corpus, stages: dict[str, bool], query: str
) -> None:
    seen = {}
    for who in ("member", *OUTSIDERS):
        outcome = search(viewer_of(corpus, who), query, **stages)
        assert outcome.hybrid is not None
        seen[who] = outcome
    member = seen["member"].hybrid
    assert member is not None and "acme/vault" in repositories_of(seen["member"])
    for who in OUTSIDERS:
        result = seen[who].hybrid
        assert result is not None
        assert repositories_of(seen[who]) == {"acme/shop"}
        assert not leaks([h.content for h in result.hits], corpus.vault)
        assert result.stage("scope").detail["repositories"] == 1  # type: ignore[union-attr]
        shop_chunks = Chunk.objects.filter(repository=corpus.shop).count()
        assert result.total_bm25_hits <= shop_chunks and result.total_vector_hits <= shop_chunks
        # A restricted repository's chunks never count: fewer than the member's totals.
        assert result.total_bm25_hits + result.total_vector_hits < (
            member.total_bm25_hits + member.total_vector_hits
        )


def test_exact_regex_and_symbol_search_count_only_visible_matches(corpus: Corpus) -> None:
    queries = ['"zanzibar_quokka_token"', r"/zanzibar_quokka_\w+/", f"/{SECRET[:-1]}\\d/"]
    member = [search(corpus.as_member, q).exact for q in queries]
    assert [(r.total, r.match_total) for r in member if r] == [(2, 3), (2, 3), (2, 3)]
    for who in OUTSIDERS:
        found = [search(viewer_of(corpus, who), q) for q in queries]
        counts = [(o.exact.total, o.exact.match_total) for o in found if o.exact]
        assert counts == [(1, 1), (1, 1), (0, 0)], who
        assert all(repositories_of(o) <= {"acme/shop"} for o in found)
        assert not leaks([o.exact_scope for o in found], corpus.vault)
    symbol = "sym:zanzibar_quokka_token"
    assert repositories_of(search(corpus.as_member, symbol)) == {"acme/vault"}
    for who in OUTSIDERS:
        assert search(viewer_of(corpus, who), symbol).definitions == []


def test_the_exact_match_count_beside_a_hybrid_answer_counts_visible_files(
    corpus: Corpus,
) -> None:
    assert search(corpus.as_member, "zanzibar_quokka_token").exact_matches == 3  # lines
    for who in OUTSIDERS:
        assert search(viewer_of(corpus, who), "zanzibar_quokka_token").exact_matches == 1


def test_cursors_page_through_visible_files_only(corpus: Corpus) -> None:
    member_page = search(corpus.as_member, "/def/", limit=1).exact
    assert member_page is not None and member_page.next_cursor
    for who in OUTSIDERS:
        viewer = viewer_of(corpus, who)
        names, cursor = [], None
        while True:
            request = contract.search_request({"query": "/def/", "limit": 1}, viewer=viewer)
            page = run_search(SearchCall(request, cursor=cursor)).exact
            assert page is not None
            names += [hit.file.repo_name for hit in page.hits]
            if not page.next_cursor:
                break
            assert not leaks(page.next_cursor, corpus.vault)
            cursor = page.next_cursor
        assert names == ["acme/shop"]
        # Someone else's cursor is refused exactly like a corrupt one.
        request = contract.search_request({"query": "/def/", "limit": 1}, viewer=viewer)
        errors = []
        for bad in (member_page.next_cursor, "bm90IGEgY3Vyc29y"):
            with pytest.raises(QueryRejected) as caught:
                run_search(SearchCall(request, cursor=bad))
            errors.append((caught.value.code, caught.value.message, caught.value.details))
        assert errors[0] == errors[1] and errors[0][0] == "invalid_cursor"


def _rejection(viewer: Viewer, query: str, **fields: Any) -> tuple[type, str, Any]:
    try:
        search(viewer, query, **fields)
    except (QueryRejected, UnknownRepositories) as exc:
        details = getattr(exc, "details", None) or getattr(exc, "ids", None)
        return type(exc), str(exc), details
    raise AssertionError(f"{query!r} was not refused")


@pytest.mark.parametrize("query", ["vault token", '"zanzibar_quokka_token"', "sym:open_vault"])
def test_an_invisible_repository_is_refused_like_one_that_does_not_exist(
    corpus: Corpus, query: str
) -> None:
    missing = uuid.uuid4()
    for who in OUTSIDERS:
        viewer = viewer_of(corpus, who)
        by_id = _rejection(viewer, query, repo_ids=[corpus.vault.pk])
        expected = _rejection(viewer, query, repo_ids=[missing])
        assert by_id == (
            expected[0],
            expected[1].replace(str(missing), str(corpus.vault.pk)),
            [corpus.vault.pk],
        )
        by_name = _rejection(viewer, f"repo:acme/vault {query}")
        expected = _rejection(viewer, f"repo:acme/nowhere {query}")
        assert by_name[0] is QueryRejected
        assert by_name[1:] == tuple(
            json.loads(json.dumps(part).replace("acme/nowhere", "acme/vault"))
            for part in expected[1:]
        )
        # A pattern only ever matches visible names.
        assert repositories_of(search(viewer, f"repo:acme/* {query}")) <= {"acme/shop"}
    assert repositories_of(search(corpus.as_member, f"repo:acme/vault {query}")) == {"acme/vault"}


def test_expansion_and_hyde_prompts_and_lists_hold_no_restricted_code(
    corpus: Corpus, chat_model: Any
) -> None:
    chat_model.chat_handler = lambda messages: (
        '["zanzibar quokka token", "vault token reader"]'
        if "JSON list" in messages[0]["content"]
        else "def zanzibar_quokka_token(settings):\n    return settings['token']\n"
    )
    for who in OUTSIDERS:
        viewer = viewer_of(corpus, who)
        outcome = search(viewer, "where is the vault token read", use_expansion=True)
        assert outcome.hybrid is not None
        assert outcome.hybrid.stage("expansion").status == "ran"  # type: ignore[union-attr]
        assert repositories_of(outcome) == {"acme/shop"}
        request = contract.search_request({"query": "where is the vault token read"}, viewer=viewer)
        hyde = run_hyde(request.query, request, chat_model_client(), limit=20)
        assert hyde.ranked, hyde.trace
        vault_chunks = set(
            Chunk.objects.filter(repository=corpus.vault).values_list("pk", flat=True)
        )
        assert not {chunk_id for chunk_id, _ in hyde.ranked} & vault_chunks
    member = contract.search_request(
        {"query": "where is the vault token read"}, viewer=corpus.as_member
    )
    ranked = run_hyde(member.query, member, chat_model_client(), limit=20).ranked
    assert {chunk_id for chunk_id, _ in ranked} & set(
        Chunk.objects.filter(repository=corpus.vault).values_list("pk", flat=True)
    )
    assert chat_model.requests_to("/api/chat")
    assert not leaks([r.body for r in chat_model.requests_to("/api/chat")], corpus.vault)


def chat_model_client() -> Any:
    import llm

    return llm.get_chat()


def test_ask_never_shows_the_model_restricted_code(corpus: Corpus, chat_model: Any) -> None:
    chat_model.chat_handler = lambda messages: (
        "def zanzibar_quokka_token(settings):\n    return settings['token']\n"
        if "hypothetical" in messages[0]["content"] or "plausible" in messages[0]["content"]
        else "The token is read in [1]."
    )
    question = "how does the pool get the zanzibar_quokka_token of the vault?"
    for who in OUTSIDERS:
        chat_model.requests.clear()
        ask = AskRequest(question, k=8, expand=True, hyde=True, viewer=viewer_of(corpus, who))
        result = answer_question(ask)
        assert result.answered and result.context
        assert {s.repo_name for s in result.context} == {"acme/shop"}
        assert not leaks(result.as_dict(), corpus.vault), who
        prompts = [r.body for r in chat_model.requests_to("/api/chat")]
        assert len(prompts) == 2  # HyDE's snippet and the answer
        assert not leaks(prompts, corpus.vault), who
    chat_model.requests.clear()
    answer_question(AskRequest(question, k=8, expand=True, hyde=True, viewer=corpus.as_member))
    assert SECRET in json.dumps([r.body for r in chat_model.requests_to("/api/chat")])


def test_call_graph_expansion_and_snippets_keep_to_the_viewer(corpus: Corpus) -> None:
    opener = Chunk.objects.get(repository=corpus.vault, symbol="open_vault").pk
    seeds = load_snippets([opener], Viewer.everything())
    reached = {s.symbol for s in expand_call_graph(seeds, corpus.as_member)}
    assert reached == {"zanzibar_quokka_token", "connect_vault"}
    for who in OUTSIDERS:
        assert expand_call_graph(seeds, viewer_of(corpus, who)) == []
        assert load_snippets([opener], viewer_of(corpus, who)) == []


TOOL_CALLS = {
    "repository_status": lambda ref, viewer: tools.repository_status(ref, viewer=viewer),
    "get_file": lambda ref, viewer: tools.get_file(ref, "src/vault.py", viewer=viewer),
    "search_code": lambda ref, viewer: tools.search_code("token", repo=ref, viewer=viewer),
}


def _tool_error(fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    with pytest.raises(tools.ToolInputError) as caught:
        fn(*args, **kwargs)
    return caught.value.payload["error"]  # type: ignore[no-any-return]


def test_mcp_tools_answer_an_outsider_as_if_the_repository_did_not_exist(corpus: Corpus) -> None:
    for who in OUTSIDERS:
        viewer = viewer_of(corpus, who)
        listed = tools.list_repositories(viewer=viewer)
        assert [r["name"] for r in listed["repositories"]] == ["acme/shop"]
        answers = [
            tools.search_code("vault token zanzibar quokka", expand=True, viewer=viewer),
            tools.search_code('"zanzibar_quokka_token"', viewer=viewer),
            tools.search_code(f"/{SECRET[:-1]}\\d/", viewer=viewer),
            tools.search_code("sym:zanzibar_quokka_token", viewer=viewer),
        ]
        assert answers[1]["total"] == 1 and answers[2]["total"] == 0
        assert not leaks(answers, corpus.vault), who
        refs = [("acme/vault", "acme/nowhere"), (str(corpus.vault.pk), str(uuid.uuid4()))]
        for ref, missing in refs:
            for name, call in TOOL_CALLS.items():
                error = _tool_error(call, ref, viewer)
                expected = _tool_error(call, missing, viewer)
                assert error == json.loads(json.dumps(expected).replace(missing, ref)), name
                assert error["code"] == "unknown_repo" and "acme/shop" in error["valid"]
                assert "acme/vault" not in error["valid"]
    member = corpus.as_member
    assert SECRET in tools.get_file("acme/vault", "src/vault.py", viewer=member)["content"]
    assert len(tools.list_repositories(viewer=member)["repositories"]) == 2


def test_a_change_of_groups_counts_from_the_next_search(corpus: Corpus) -> None:
    """Each viewer's repository statement is built once and kept (``search.retrieval.scope``);
    what it answers must not be: a repository restricted, opened or a group joined after a
    viewer's first search shows in that viewer's next one."""
    from django.contrib.auth.models import Group

    from search.retrieval.scope import scope_repositories

    def names(viewer: Viewer, ids: list[Any] | None = None) -> set[str]:
        return {r.name for r in scope_repositories(ids, viewer)}

    outsider, member = corpus.as_outsider, corpus.as_member
    assert names(outsider) == {"acme/shop"} and names(member) == {"acme/shop", "acme/vault"}
    corpus.vault.visible_to_groups.clear()  # opened to every account
    assert names(outsider) == {"acme/shop", "acme/vault"} == names(Viewer())
    team = Group.objects.get(name="team-a")
    corpus.shop.visible_to_groups.set([team])  # restricted now
    corpus.vault.visible_to_groups.set([team])
    assert names(outsider) == set() and names(member) == {"acme/shop", "acme/vault"}
    with pytest.raises(UnknownRepositories):
        names(outsider, [corpus.vault.pk])
    corpus.outsider.groups.add(team)  # joined: a new viewer (its groups), the same statement shape
    assert names(corpus.as_outsider, [corpus.vault.pk]) == {"acme/vault"}
