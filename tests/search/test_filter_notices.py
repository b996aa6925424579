"""A filter that matches no file is said in the answer's ``notices``, with what would match: an
empty answer names the ``file:`` glob or ``lang:`` that emptied it, and an exclusion that
excludes nothing (a mistyped ``-file:``) is named beside the results it left as they were; in
every mode, through the API, the MCP tool, the command line and the results page. Filters that
all match files add nothing. A filter name written with nothing after its colon (``file: src/``),
searched as a word, is said with the query that gives it its value.

The real ``acme/httpclient`` of the exact-search tests (``tests.search.exact_corpus``: Python,
JavaScript, C++, Markdown and text under ``src/``, ``tests/``, ``docs/`` and ``notes/``) is indexed
once for the module.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from accounts.visibility import viewer_for
from indexing.clone_paths import repository_dir
from indexing.models import Repository
from search.mcp.navigation_tools import find_symbol
from search.mcp.tools import search_code
from tests.accounts_support import make_account
from tests.indexing.real_run import index, mirror
from tests.search.exact_corpus import FILES
from tests.shared_rows import shared_rows

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def repository(
    django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Repository]:
    def build() -> Repository:
        return index(mirror(tmp_path_factory.mktemp("notices"), FILES), "acme/httpclient")

    with shared_rows(django_db_blocker, build, "filter-notices corpus") as built:
        yield built
        shutil.rmtree(repository_dir(built.pk), ignore_errors=True)


@pytest.fixture
def reader(repository: Repository) -> User:
    return make_account("read")


def search(user: User, query: str, **fields: Any) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    response = client.post(
        "/api/search",
        data=json.dumps({"query": query, **fields}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize(
    ("query", "mode"),
    [
        ("send the request file:lib/httpclient/*.py", "hybrid"),
        ('"def send" file:lib/httpclient/*.py', "exact"),
        ("/def +send/ file:lib/httpclient/*.py", "regex"),
        ("sym:send file:lib/httpclient/*.py", "symbol"),
        ("type:file client file:lib/httpclient/*.py", "file"),
    ],
)
def test_a_glob_matching_no_file_is_named_with_the_glob_at_any_depth(
    reader: User, query: str, mode: str
) -> None:
    body = search(reader, query)
    assert body["mode"] == mode
    assert body["results"] == []
    assert body["notices"] == [
        {
            "filter": "file:lib/httpclient/*.py",
            "message": "file:lib/httpclient/*.py matches no indexed file in the repository"
            " searched — did you mean file:**/*.py? (it matches src/httpclient/client.py)",
            "suggestion": "file:**/*.py",
            "suggested_query": query.replace("file:lib/httpclient/*.py", "file:**/*.py"),
        }
    ]


def test_a_glob_in_the_wrong_case_names_the_path_it_would_match(reader: User) -> None:
    body = search(reader, '"def send" file:SRC/HttpClient/Client.py')
    assert body["results"] == []
    assert body["notices"] == [
        {
            "filter": "file:SRC/HttpClient/Client.py",
            "message": "file:SRC/HttpClient/Client.py matches no indexed file in the repository"
            " searched — paths match case-sensitively; in another case it would match"
            " src/httpclient/client.py",
            "suggestion": "file:src/httpclient/client.py",
            "suggested_query": '"def send" file:src/httpclient/client.py',
        }
    ]


@pytest.mark.parametrize(
    ("glob", "nearest"),
    [("src/httpclient/clinet.py", "src/httpclient/client.py"), ("clinet.py", "client.py")],
)
def test_a_misspelt_path_names_the_nearest_spelling(reader: User, glob: str, nearest: str) -> None:
    body = search(reader, f'"def send" file:{glob}')
    assert body["results"] == []
    assert body["notices"] == [
        {
            "filter": f"file:{glob}",
            "message": f"file:{glob} matches no indexed file in the repository searched"
            f" — did you mean file:{nearest}?",
            "suggestion": f"file:{nearest}",
            "suggested_query": f'"def send" file:{nearest}',
        }
    ]


@pytest.mark.parametrize(
    "written", ["path:src/httpclient/clinet.py", 'FILE:"src/httpclient/clinet.py"']
)
def test_a_filter_written_another_way_is_named_and_replaced_as_written(
    reader: User, written: str
) -> None:
    (notice,) = search(reader, f'"def send" {written}')["notices"]
    assert notice["filter"] == written
    assert notice["suggested_query"] == '"def send" file:src/httpclient/client.py'


def test_a_path_like_no_other_gets_no_suggestion(reader: User) -> None:
    body = search(reader, '"def send" file:src/httpclient/nothing_like_it.py')
    assert [n["message"] for n in body["notices"]] == [
        "file:src/httpclient/nothing_like_it.py matches no indexed file in the repository searched"
    ]


def test_the_api_paths_field_is_checked_as_file_is(reader: User) -> None:
    body = search(reader, "send the request", paths=["vendor/**"])
    assert body["results"] == []
    assert body["notices"] == [
        {
            "filter": "file:vendor/**",
            "message": "file:vendor/** matches no indexed file in the repository searched",
        }
    ]


def test_a_language_with_no_file_lists_the_languages_there(reader: User) -> None:
    body = search(reader, '"def send" lang:go')
    assert body["results"] == []
    (notice,) = body["notices"]
    assert notice["filter"] == "lang:go"
    assert notice["message"].startswith(
        "lang:go matches no indexed file in the repository searched; its languages: "
    )
    assert {"lang:python", "lang:javascript", "lang:markdown"} <= set(
        notice["message"].split("; its languages: ")[1].split(", ")
    )


def test_filters_that_each_match_but_not_together_are_said_together(reader: User) -> None:
    body = search(reader, '"def send" file:docs/** lang:python')
    assert body["results"] == []
    assert body["notices"] == [
        {
            "filter": "",
            "message": "the file and language filters together match no indexed file in the"
            " repository searched; each matches files on its own",
        }
    ]


def test_an_exclusion_that_leaves_no_file_is_said(reader: User) -> None:
    body = search(reader, '"def send" -file:**')
    assert body["results"] == []
    assert [n["filter"] for n in body["notices"]] == [""]


def test_no_notice_when_the_filters_match_files_or_there_are_results(reader: User) -> None:
    empty = search(reader, '"no such text anywhere" file:src/**/*.py lang:python')
    assert empty["results"] == [] and empty["notices"] == []
    found = search(reader, '"def send" file:src/**/*.py')
    assert found["results"] and found["notices"] == []


def test_an_exclusion_that_excludes_no_file_is_said_beside_the_results(reader: User) -> None:
    body = search(reader, '"def send" -file:lib/native/')
    assert body["results"]
    assert body["notices"] == [
        {
            "filter": "-file:lib/native/",
            "message": "-file:lib/native/ excludes no indexed file in the repository searched"
            " — did you mean -file:**/native/? (it matches src/native/vec.cpp)",
            "suggestion": "-file:**/native/",
            "suggested_query": '"def send" -file:**/native/',
        }
    ]
    hybrid = search(reader, "send the request -lang:go")
    assert hybrid["mode"] == "hybrid" and hybrid["results"]
    (notice,) = hybrid["notices"]
    assert notice["filter"] == "-lang:go"
    assert notice["message"].startswith("-lang:go excludes no indexed file in the repository")


def test_an_exclusion_that_excludes_files_adds_nothing(reader: User) -> None:
    body = search(reader, '"def send" -file:tests/ -lang:markdown')
    assert body["results"] and body["notices"] == []


def test_the_mcp_tool_carries_the_notices_of_an_empty_answer(reader: User) -> None:
    answer = search_code('"def send" file:lib/*.py', viewer=viewer_for(reader))
    assert [n["filter"] for n in answer["notices"]] == ["file:lib/*.py"]
    assert "notices" not in search_code('"def send"', viewer=viewer_for(reader))


def test_symbol_search_says_when_its_language_has_no_file(reader: User) -> None:
    client = Client()
    client.force_login(reader)
    body = client.get("/api/symbols", {"q": "send", "lang": "go"}).json()
    assert body["results"] == []
    (notice,) = body["notices"]
    assert notice["filter"] == "lang:go"
    assert "lang:python" in notice["message"]
    found = client.get("/api/symbols", {"q": "send", "lang": "python"}).json()
    assert found["results"] and found["notices"] == []
    tool = find_symbol("send", lang="go", viewer=viewer_for(reader))
    assert tool["definitions"] == [] and [n["filter"] for n in tool["notices"]] == ["lang:go"]
    assert "notices" not in find_symbol("send", lang="python", viewer=viewer_for(reader))


def test_the_command_line_prints_the_notice_beside_no_results(repository: Repository) -> None:
    out, err = StringIO(), StringIO()
    call_command("search", '"def send" lang:go', stdout=out, stderr=err)
    assert out.getvalue().strip() == "no results"
    assert "lang:go matches no indexed file in the repository searched" in err.getvalue()
    out, err = StringIO(), StringIO()
    call_command("search", '"def send" -file:vendr/', stdout=out, stderr=err)
    assert "src/httpclient/client.py" in out.getvalue()
    assert "-file:vendr/ excludes no indexed file" in err.getvalue()


def test_the_results_page_shows_the_notice(reader: User) -> None:
    query = '"def send" file:src/httpclient/clinet.py'
    body = search(reader, query)
    client = Client()
    client.force_login(reader)
    page = client.post(
        "/ui/results",
        data=json.dumps({"request": {"query": query}, "response": body}),
        content_type="application/json",
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert "No results for" in html
    assert '<p class="notice">file:src/httpclient/clinet.py matches no indexed file' in html
    # The corrected search is one click away.
    assert (
        '<a class="suggestion" href="/?q=%22def+send%22+file%3Asrc%2Fhttpclient%2Fclient.py"'
        ' data-query="&quot;def send&quot; file:src/httpclient/client.py">'
        "Search for &quot;def send&quot; file:src/httpclient/client.py</a>"
    ) in html
    query = '"def send" -file:vendr/'
    body = search(reader, query)
    page = client.post(
        "/ui/results",
        data=json.dumps({"request": {"query": query}, "response": body}),
        content_type="application/json",
    )
    html = page.content.decode()
    assert 'class="results"' in html
    assert '<p class="notice panel" role="note">-file:vendr/ excludes no indexed file' in html


@pytest.mark.parametrize(
    ("query", "suggested"),
    [
        ('"def send" file: src/httpclient/', '"def send" file:src/httpclient/'),
        ("send the request -lang: markdown", "send the request -lang:markdown"),
        ('repo: acme/httpclient "def send"', 'repo:acme/httpclient "def send"'),
    ],
)
def test_a_filter_name_with_nothing_after_its_colon_is_said_with_the_query_meant(
    reader: User, query: str, suggested: str
) -> None:
    body = search(reader, query)
    written, _, value = suggested.partition(":")
    bare = written.split()[-1] + ":"
    assert body["notices"][0] == {
        "filter": bare,
        "message": f"'{bare}' has nothing after the colon, so it was searched as a word: a filter"
        f" takes its value right after the colon ({bare}{value.split()[0]})",
        "suggestion": f"{bare}{value.split()[0]}",
        "suggested_query": suggested,
    }
    # The query it suggests runs with the filter applied, and says nothing more.
    assert search(reader, suggested)["notices"] == []


def test_a_bare_filter_name_gets_no_suggestion_the_search_would_refuse(reader: User) -> None:
    # file:client alone has nothing to search for: said, with no query to run.
    (notice,) = search(reader, "file: client")["notices"]
    assert notice["filter"] == "file:" and "suggestion" not in notice
    # Prose: the next word is no value the filter takes (type:int is no type, case:the is not
    # yes or no, a symbol search takes no other words): nothing to say.
    for query in ("send with type: int", "in this case: the request", "send the sym: request"):
        assert search(reader, query)["notices"] == [], query
    # The next word is a filter of its own: joining it would lose it.
    for query in ("send the request file: lang:python", "send the request file: -lang:markdown"):
        (notice,) = search(reader, query)["notices"]
        assert notice["filter"] == "file:" and "suggestion" not in notice
    # Each name once, and at most three.
    notices = search(reader, "send file: x file: y lang: go repo: b sym: c")["notices"]
    assert [n["filter"] for n in notices] == ["file:", "lang:", "repo:"]
    # A colon inside other text, and quoted text, are not filter names.
    assert search(reader, '"file:" in std:: names')["notices"] == []
    # The next page of the answer does not repeat it.
    first = search(reader, "send the request file: src/")
    assert first["notices"] and first["next_cursor"]
    again = search(reader, "send the request file: src/", cursor=first["next_cursor"])
    assert again["notices"] == []


def test_a_file_name_search_that_finds_nothing_names_the_nearest_file_name(reader: User) -> None:
    body = search(reader, "type:file clinet.py")
    assert body["mode"] == "file" and body["results"] == []
    assert body["notices"] == [
        {
            "filter": "type:file",
            "message": "no indexed path in the repository searched holds 'clinet.py' — did you"
            " mean client.py?",
            "suggestion": "client.py",
            "suggested_query": "type:file client.py",
        }
    ]
    assert search(reader, "type:file client.py")["results"][0]["file_path"] == (
        "src/httpclient/client.py"
    )
    # repo: filters that leave no repository: no path is there to hold it, nothing to say.
    body = search(reader, "type:file repo:acme/httpclient -repo:acme/httpclient clinet.py")
    assert body["results"] == [] and body["notices"] == []
    # A name like no other is said without a suggestion; a word that some path holds, not.
    (notice,) = search(reader, "type:file zqxjkw.py httpclient")["notices"]
    assert notice == {
        "filter": "type:file",
        "message": "no indexed path in the repository searched holds 'zqxjkw.py'",
    }
