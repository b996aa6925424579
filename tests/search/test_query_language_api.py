"""The query language through ``POST /api/search`` and the MCP tool: aliases answer exactly as
the canonical filters and as ``git grep``; boolean combinations equal ``git grep``'s sets; every
refusal carries its suggestion; ``repo:`` takes a unique prefix and suggests only names the
account may see.

The repositories are indexed once for the module (tests/shared_rows.py): the real
``acme/httpclient`` of the exact-search tests (``tests.search.exact_corpus``), and two small
ones named alike -- ``requests-2.32.3`` (everyone) and ``requests-internal`` (group ``team-q``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from accounts.visibility import viewer_for
from indexing.clone_paths import repository_dir
from indexing.models import Repository
from search.mcp.tools import ToolInputError, search_code
from tests.accounts_support import make_account
from tests.factories import indexed_repository
from tests.indexing.real_run import index, mirror
from tests.search.exact_corpus import FILES
from tests.shared_rows import shared_rows

pytestmark = pytest.mark.django_db

URL = "/api/search"
GROUP = "team-q"


@dataclass
class Corpus:
    path: Path  # the bare repository acme/httpclient was indexed from
    httpclient: Repository
    public: Repository  # requests-2.32.3
    internal: Repository  # requests-internal, team-q only
    member: User  # in team-q
    outsider: User


@pytest.fixture(scope="module")
def corpus(
    django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Corpus]:
    """Built once for the module in a transaction rolled back at its end (tests/shared_rows.py)."""

    def build() -> Corpus:
        path = mirror(tmp_path_factory.mktemp("query-language"), FILES)
        httpclient = index(path, "acme/httpclient")
        public = indexed_repository("requests-2.32.3", ["def get(url):\n    return url\n"])
        internal = indexed_repository(
            "requests-internal", ["def get_internal(url):\n    return url\n"]
        )
        member = make_account("read", groups=[GROUP])
        internal.visible_to_groups.set([Group.objects.get(name=GROUP)])
        return Corpus(path, httpclient, public, internal, member, make_account("read"))

    with shared_rows(django_db_blocker, build, "query-language corpus") as built:
        yield built
        for repository in (built.httpclient, built.public, built.internal):
            shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post(client: Client, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post(URL, data=json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def every_hit(client: Client, query: str) -> tuple[list[tuple[str, int, str]], dict[str, Any]]:
    """(path, line, text) of every matching line over every page, and the first page."""
    found: list[tuple[str, int, str]] = []
    first: dict[str, Any] = {}
    cursor = None
    for _ in range(50):
        status, page = post(
            client, {"query": query, "limit": 3, **({"cursor": cursor} if cursor else {})}
        )
        assert status == 200, page
        first = first or page
        found += [
            (h["file_path"], m["line"], m["text"]) for h in page["results"] for m in h["matches"]
        ]
        cursor = page["next_cursor"]
        if not cursor:
            return found, first
    raise AssertionError("more than 50 pages")


def git_grep(
    corpus: Corpus, flags: list[str], pattern: str, *paths: str
) -> set[tuple[str, int, str]]:
    commit = corpus.httpclient.last_indexed_commit
    done = subprocess.run(
        [
            "git",
            f"--git-dir={corpus.path}",
            "grep",
            "-n",
            "-I",
            *flags,
            "-e",
            pattern,
            commit,
            "--",
            *paths,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    found = set()
    for line in done.stdout.splitlines():
        _, path, number, text = line.split(":", 3)
        found.add((path, int(number), text))
    return found


def files(lines: set[tuple[str, int, str]]) -> set[str]:
    return {path for path, _, _ in lines}


ALIASES = [
    # (alias query, canonical query, git grep flags, pattern, pathspecs)
    (
        'language:python "follow_redirects"',
        'lang:python "follow_redirects"',
        ["-F", "-i"],
        "follow_redirects",
        ["*.py"],
    ),
    ('language:py case:yes "Client"', 'lang:python case:yes "Client"', ["-F"], "Client", ["*.py"]),
    ('path:src/ "client"', 'file:src/ "client"', ["-F", "-i"], "client", ["src/"]),
    ('-path:tests/ "client"', '-file:tests/ "client"', ["-F", "-i"], "client", [":!tests/"]),
    (
        'content:"follow_redirects=True"',
        '"follow_redirects=True"',
        ["-F", "-i"],
        "follow_redirects=True",
        [],
    ),
    (
        r"content:/def [a-z_]+_auth\(/",
        r"/def [a-z_]+_auth\(/",
        ["-E", "-i"],
        r"def [a-z_]+_auth\(",
        [],
    ),
]


@pytest.mark.parametrize(("alias", "canonical", "flags", "pattern", "paths"), ALIASES)
def test_aliases_answer_as_the_canonical_filters_and_git_grep(
    corpus: Corpus, alias: str, canonical: str, flags: list[str], pattern: str, paths: list[str]
) -> None:
    client = signed_in(corpus.outsider)
    by_alias, first = every_hit(client, f"repo:acme/httpclient {alias}")
    by_canonical, _ = every_hit(client, f"repo:acme/httpclient {canonical}")
    expected = git_grep(corpus, flags, pattern, *paths)
    assert expected and by_alias == by_canonical
    assert set(by_alias) == expected and len(by_alias) == len(expected)
    assert first["total"] == len(files(expected)) and not first["total_is_lower_bound"]
    assert first["match_total"] == len(expected)


def test_symbol_is_sym(corpus: Corpus) -> None:
    client = signed_in(corpus.outsider)
    status, by_alias = post(client, {"query": "symbol:send"})
    assert status == 200 and by_alias["mode"] == "symbol" and by_alias["results"]
    _, by_canonical = post(client, {"query": "sym:send"})
    key = [(h["file_path"], h["start_line"], h["symbol"]) for h in by_alias["results"]]
    assert key == [(h["file_path"], h["start_line"], h["symbol"]) for h in by_canonical["results"]]


def _grep(corpus: Corpus, literal: str) -> set[tuple[str, int, str]]:
    return git_grep(corpus, ["-F", "-i"], literal)


def _within(lines: set[tuple[str, int, str]], kept: set[str]) -> set[tuple[str, int, str]]:
    return {line for line in lines if line[0] in kept}


def test_boolean_combinations_equal_git_grep_sets(corpus: Corpus) -> None:
    """Per file, as GitHub's code search: OR holds either, NOT leaves out the files holding
    the term; the lines shown are those of the terms not under a NOT."""
    g = lambda literal: _grep(corpus, literal)  # noqa: E731
    make, token = g("make_auth"), g("token_auth")
    client_, redirects = g("Client"), g("follow_redirects")
    push, imports = g("push_back"), g("import")
    returns = git_grep(corpus, ["-E", "-i"], "return +[a-z]")
    without_redirects = files(client_) - files(redirects)
    kept = (files(make) | files(push)) - files(imports)
    cases = {
        '"make_auth" OR "token_auth"': make | token,
        '"Client" NOT "follow_redirects"': _within(client_, without_redirects),
        '"Client" -"follow_redirects"': _within(client_, without_redirects),
        '("make_auth" OR "push_back") -"import"': _within(make | push, kept),
        '/return +[a-z]/ OR "push_back"': returns | push,
        '("Client" OR "café") "follow_redirects"': _within(
            client_ | g("café") | redirects, (files(client_) | files(g("café"))) & files(redirects)
        ),
    }
    assert kept == {"src/native/vec.cpp"}  # (the corpus makes each case say something)
    client = signed_in(corpus.outsider)
    for query, expected in cases.items():
        found, first = every_hit(client, f"repo:acme/httpclient {query}")
        assert expected, query
        assert set(found) == expected and len(found) == len(expected), query
        assert first["total"] == len(files(expected)) and not first["total_is_lower_bound"]
        assert first["match_total"] == len(expected), query


REFUSALS = [
    # (query, status, code, details it must carry)
    (
        'lang:pyton "x"',
        400,
        "unknown_language",
        {"suggestion": "python", "suggested_query": 'lang:python "x"'},
    ),
    ('language:javscript "x"', 400, "unknown_language", {"suggestion": "javascript"}),
    (
        "lnag:python timeout",
        400,
        "unknown_filter",
        {"suggestion": "lang:", "suggested_query": "lang:python timeout"},
    ),
    ("org:acme timeout", 400, "unsupported_filter", {"filter": "org:"}),
    (
        "lang:go timeout OR retry",
        400,
        "unsupported_combination",
        {"example": '"timeout" OR "retry"', "suggested_query": 'lang:go "timeout" OR "retry"'},
    ),
    ('"a" NOT b', 400, "unsupported_combination", {"suggested_query": '"a" NOT "b"'}),
    ('("a" OR "b") timeout', 400, "unsupported_combination", {"words": ["timeout"]}),
    ("case:yes timeout", 400, "unsupported_combination", {"filter": "case:"}),
    ('("a" OR "b"', 400, "unbalanced_parenthesis", {"position": 0}),
    ('-"x"', 400, "invalid_expression", {}),
    (
        'repo:reqests "x"',
        404,
        "unknown_repository",
        {"suggestion": "requests-2.32.3", "suggested_query": 'repo:requests-2.32.3 "x"'},
    ),
    ('repo:httpclient-x "x"', 404, "unknown_repository", {"suggestions": ["acme/httpclient"]}),
]


@pytest.mark.parametrize(("query", "status", "code", "details"), REFUSALS)
def test_refusals_carry_their_suggestion(
    corpus: Corpus, query: str, status: int, code: str, details: dict[str, Any]
) -> None:
    got, body = post(signed_in(corpus.outsider), {"query": query})
    assert got == status, body
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    for key, value in details.items():
        assert body["error"]["details"][key] == value, body["error"]
    if "suggestion" in details:
        assert str(details["suggestion"]) in body["error"]["message"]


def test_an_operator_among_other_words_suggests_no_query_that_would_be_refused(
    corpus: Corpus,
) -> None:
    client = signed_in(corpus.outsider)
    for query in (
        *("a NOT b", "connect timeout OR retry", "NOT timeout", "OR retry", "timeout OR"),
        *("lang:go OR retry", "(timeout OR retry)"),
    ):
        got, body = post(client, {"query": query})
        assert got == 400 and body["error"]["code"] == "unsupported_combination"
        assert "suggested_query" not in body["error"]["details"]
    # The suggestions given do run.
    for query in ("lang:python timeout OR retry", '"a" NOT b'):
        got, body = post(client, {"query": query})
        got, _ = post(client, {"query": body["error"]["details"]["suggested_query"]})
        assert got == 200


def test_the_languages_field_is_checked_as_lang_is(corpus: Corpus) -> None:
    client = signed_in(corpus.outsider)
    got, body = post(client, {"query": '"follow_redirects"', "languages": ["pyton"]})
    assert got == 400 and body["error"]["code"] == "unknown_language"
    assert body["error"]["details"]["suggestion"] == "python"
    got, by_alias = post(client, {"query": '"follow_redirects"', "languages": ["Py"]})
    got_lang, by_filter = post(client, {"query": 'lang:python "follow_redirects"'})
    assert got == got_lang == 200 and by_alias["results"] == by_filter["results"]


def test_repo_takes_a_unique_prefix_among_what_the_account_may_see(corpus: Corpus) -> None:
    outsider, member = signed_in(corpus.outsider), signed_in(corpus.member)
    # The outsider sees one repository starting "requests": the prefix names it.
    got, body = post(outsider, {"query": 'repo:requests "def"'})
    assert got == 200 and {h["repo_name"] for h in body["results"]} == {"requests-2.32.3"}
    got, body = post(outsider, {"query": 'repo:httpclient "make_auth"'})  # a name's last part
    assert got == 200 and {h["repo_name"] for h in body["results"]} == {"acme/httpclient"}
    # The member sees both: the prefix is ambiguous, and the error lists them.
    got, body = post(member, {"query": 'repo:requests "def"'})
    assert got == 400 and body["error"]["code"] == "ambiguous_repository"
    assert body["error"]["details"]["suggestions"] == ["requests-2.32.3", "requests-internal"]
    got, body = post(member, {"query": 'repo:requests-i "def"'})
    assert got == 200 and {h["repo_name"] for h in body["results"]} == {"requests-internal"}
    # A restricted name is unknown to the outsider and never suggested to it.
    for query in (
        'repo:requests-internal "def"',
        'repo:requests-intern "def"',
        'repo:requests-i "x"',
    ):
        got, body = post(outsider, {"query": query})
        assert got == 404 and body["error"]["code"] == "unknown_repository", body
        details = body["error"]["details"]
        suggested = json.dumps([details.get("suggestion"), details["suggestions"]])
        assert "internal" not in suggested
        offered = body["error"]["message"].split(query.split()[0])[-1]  # after the name asked
        assert "internal" not in offered, body["error"]["message"]
    got, body = post(member, {"query": 'repo:requests-intenal "def"'})
    assert got == 404 and body["error"]["details"]["suggestion"] == "requests-internal"


def test_unknown_names_in_the_repos_field_are_suggested_too(corpus: Corpus) -> None:
    got, body = post(signed_in(corpus.outsider), {"query": "x", "repos": ["acme/httpclint"]})
    assert got == 404 and body["error"]["code"] == "unknown_repository"
    assert body["error"]["details"]["suggestions"] == {"acme/httpclint": ["acme/httpclient"]}


def test_mcp_errors_carry_the_same_code_message_and_suggestion(corpus: Corpus) -> None:
    viewer = viewer_for(corpus.outsider)
    client = signed_in(corpus.outsider)
    for query in ('lang:pyton "x"', "lnag:python x", 'repo:reqests "x"', "timeout OR retry"):
        _, api = post(client, {"query": query})
        with pytest.raises(ToolInputError) as caught:
            search_code(query, viewer=viewer)
        error = caught.value.payload["error"]
        assert (error["code"], error["message"]) == (api["error"]["code"], api["error"]["message"])
        assert error["details"] == api["error"]["details"]
        assert error["valid"]
    with pytest.raises(ToolInputError) as caught:
        search_code('repo:requests-intern "x"', viewer=viewer)
    error = caught.value.payload["error"]
    assert "requests-internal" not in json.dumps([error["valid"], error["details"]["suggestions"]])
