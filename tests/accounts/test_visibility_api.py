"""Visibility through the API, the pages and the commands: a repository an account may not see
answers every endpoint exactly like one that does not exist, and is in no list, count or page;
repositories are restricted and opened again with ``visibility_groups``."""

from __future__ import annotations

import io
import json
import re
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from bench.eval.harness.command import find_repository
from indexing.models import IndexJob, Repository
from tests.accounts.visibility_corpus import GROUP, SECRET, Corpus, leaks
from tests.accounts_support import make_account, token_client


def api(user: Any) -> APIClient:
    """A client sending a real API token of ``user`` (its role's scope)."""
    return token_client(user=user)


def ui(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def same_404(client: APIClient, method: str, path: str, hidden: str, missing: str) -> None:
    """``path`` with the hidden id answers exactly as with the missing one (the id swapped)."""
    call = getattr(client, method)
    got = call(path.format(hidden), {}, format="json")
    expected = call(path.format(missing), {}, format="json")
    assert got.status_code == expected.status_code == 404, (path, got.content)
    assert got.json() == json.loads(json.dumps(expected.json()).replace(missing, hidden))


def test_every_repository_endpoint_answers_an_invisible_repository_like_a_missing_one(
    corpus: Corpus,
) -> None:
    hidden, missing = str(corpus.vault.pk), str(uuid.uuid4())
    before = Repository.objects.values_list("pk", "name", "updated_at").order_by("name")
    snapshot = list(before)
    reader, writer = api(corpus.outsider), api(corpus.writer)
    for path in ("/api/repos/{}", "/api/repos/{}/jobs"):
        same_404(reader, "get", path, hidden, missing)
    for method, path in (
        ("patch", "/api/repos/{}"),
        ("delete", "/api/repos/{}"),
        ("post", "/api/repos/{}/reindex"),
        ("get", "/api/repos/{}/webhook"),
        ("post", "/api/repos/{}/webhook/rotate"),
    ):
        same_404(writer, method, path, hidden, missing)
    assert list(before) == snapshot  # nothing was renamed, deleted or touched
    assert not IndexJob.objects.filter(repository=corpus.vault).exists()  # nor re-indexed
    member = api(corpus.member).get(f"/api/repos/{hidden}")
    assert member.status_code == 200 and member.json()["visibility_groups"] == [GROUP]


def test_a_misspelt_repository_suggests_only_names_the_account_may_see(corpus: Corpus) -> None:
    member = api(corpus.member).get("/api/symbols", {"q": "x", "repo": "acme/vaul"})
    assert member.status_code == 404
    assert member.json()["error"] == {
        "code": "not_found",
        "message": "no repository 'acme/vaul' — did you mean 'acme/vault'?",
        "details": {
            "repository": "acme/vaul",
            "suggestions": ["acme/vault"],
            "suggestion": "acme/vault",
        },
    }
    # To an account that may not see it, the name is as missing as any other.
    outsider = api(corpus.outsider).get("/api/symbols", {"q": "x", "repo": "acme/vaul"})
    missing = api(corpus.outsider).get("/api/symbols", {"q": "x", "repo": "acme/zzzz"})
    assert outsider.status_code == missing.status_code == 404
    assert outsider.json()["error"]["details"] == {"repository": "acme/vaul"}
    assert "vault" not in json.dumps(outsider.json())
    shop = api(corpus.outsider).get("/api/symbols", {"q": "x", "repo": "acme/shp"})
    assert shop.json()["error"]["details"]["suggestions"] == ["acme/shop"]


def test_jobs_of_an_invisible_repository_are_404_like_missing_jobs(corpus: Corpus) -> None:
    job = IndexJob.objects.create(repository=corpus.vault)
    reader = api(corpus.outsider)
    got = reader.get(f"/api/jobs/{job.pk}")
    assert api(corpus.member).get(f"/api/jobs/{job.pk}").json()["repository_id"] == str(
        corpus.vault.pk
    )
    IndexJob.objects.filter(pk=job.pk).delete()
    expected = reader.get(f"/api/jobs/{job.pk}")  # the same id, gone
    assert got.status_code == expected.status_code == 404
    assert got.json() == expected.json()


def test_the_repository_list_and_its_counts_show_visible_repositories_only(
    corpus: Corpus,
) -> None:
    outsider = api(corpus.outsider).get("/api/repos").json()
    assert [r["name"] for r in outsider] == ["acme/shop"]
    assert not leaks(outsider, corpus.vault)
    member = api(corpus.member).get("/api/repos").json()
    assert sorted(r["name"] for r in member) == ["acme/shop", "acme/vault"]
    assert {r["name"]: r["visibility_groups"] for r in member} == {
        "acme/shop": [],
        "acme/vault": [GROUP],
    }


def test_search_and_ask_over_http_keep_to_the_account(corpus: Corpus, chat_model: Any) -> None:
    chat_model.chat_handler = lambda messages: "It is read in [1]."
    reader, missing = api(corpus.outsider), str(uuid.uuid4())
    for body in ({"query": '"zanzibar_quokka_token"'}, {"query": "vault token zanzibar"}):
        found = reader.post("/api/search", body, format="json")
        assert found.status_code == 200 and not leaks(found.json(), corpus.vault)
    assert reader.post("/api/search", {"query": f'"{SECRET}"'}, format="json").json()["total"] == 0
    for path, field in (("/api/search", "query"), ("/api/ask", "question")):
        refused = [
            reader.post(path, {field: "vault token", "repo_ids": [ref]}, format="json")
            for ref in (str(corpus.vault.pk), missing)
        ]
        assert [r.status_code for r in refused] == [404, 404]
        assert refused[0].json() == json.loads(
            json.dumps(refused[1].json()).replace(missing, str(corpus.vault.pk))
        )
    asked = reader.post("/api/ask", {"question": "how is the vault token read?"}, format="json")
    assert asked.status_code == 200 and not leaks(asked.json(), corpus.vault)
    assert not leaks([r.body for r in chat_model.requests_to("/api/chat")], corpus.vault)
    member = api(corpus.member).post("/api/search", {"query": f'"{SECRET}"'}, format="json")
    assert member.json()["total"] == 2


def test_anonymous_reads_see_unrestricted_repositories_only(corpus: Corpus, settings: Any) -> None:
    settings.REPO_SEARCH_ANONYMOUS_READ = True
    anonymous, missing = APIClient(), str(uuid.uuid4())
    assert [r["name"] for r in anonymous.get("/api/repos").json()] == ["acme/shop"]
    found = anonymous.post("/api/search", {"query": '"zanzibar_quokka_token"'}, format="json")
    assert found.status_code == 200 and found.json()["total"] == 1
    assert not leaks(found.json(), corpus.vault)
    same_404(anonymous, "get", "/api/repos/{}", str(corpus.vault.pk), missing)
    settings.REPO_SEARCH_ANONYMOUS_READ = False
    assert anonymous.get("/api/repos").status_code == 401


def without_csrf(html: str) -> str:
    """The page with its CSRF tokens (masked afresh on every render) blanked out."""
    return re.sub(
        r'(name="csrf-token" content|name="csrfmiddlewaretoken" value)="[^"]*"', r"\1", html
    )


def test_pages_show_only_visible_repositories_languages_and_files(corpus: Corpus) -> None:
    outsider, member = ui(corpus.outsider), ui(corpus.member)
    for page in ("/", "/ask/"):
        html = outsider.get(page).content.decode()
        assert "acme/shop" in html and not leaks(html, corpus.vault), page
        assert "acme/vault" in member.get(page).content.decode()
    assert "haskell" not in outsider.get("/").content.decode()  # only the vault has Haskell
    assert "haskell" in member.get("/").content.decode()
    hidden = outsider.get(f"/repos/{corpus.vault.pk}/file", {"path": "src/vault.py"})
    missing_id = uuid.uuid4()
    missing = outsider.get(f"/repos/{missing_id}/file", {"path": "src/vault.py"})
    assert hidden.status_code == missing.status_code == 404
    assert without_csrf(hidden.content.decode()).replace(str(corpus.vault.pk), str(missing_id)) == (
        without_csrf(missing.content.decode())
    )
    shown = member.get(f"/repos/{corpus.vault.pk}/file", {"path": "src/vault.py"}, follow=True)
    assert shown.status_code == 200 and SECRET in shown.content.decode()


def test_posted_results_never_read_an_invisible_repositorys_chunks(corpus: Corpus) -> None:
    """The results fragment fills in chunk text the page left out: only from visible ones."""
    result = {"repo_id": str(corpus.vault.pk), "file_path": "src/vault.py", "chunk_index": 0}
    body = json.dumps({"request": {"query": "token"}, "response": {"results": [result]}})
    post = {"data": body, "content_type": "application/json"}
    assert SECRET not in ui(corpus.outsider).post("/ui/results", **post).content.decode()
    assert SECRET in ui(corpus.member).post("/ui/results", **post).content.decode()


def test_visibility_groups_are_set_checked_and_cleared_through_the_api(
    corpus: Corpus, public_dns: None
) -> None:
    team_b, _ = Group.objects.get_or_create(name="team-b")
    Group.objects.get_or_create(name="team-c")  # exists; the writer is not in it
    corpus.writer.groups.add(Group.objects.get(name=GROUP), team_b)
    writer = api(corpus.writer)
    url = "https://example.org/acme/ledger.git"
    answers = []
    for other in ("no-such", "team-c"):
        refused = writer.post(
            "/api/repos", {"url": url, "visibility_groups": [GROUP, other]}, format="json"
        )
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "unknown_group"
        assert refused.json()["error"]["details"]["unknown"] == [other]
        answers.append(json.dumps(refused.json()).replace(other, "NAME"))
    # A group the writer is not in answers exactly as one that does not exist.
    assert answers[0] == answers[1]
    assert not Repository.objects.filter(url=url).exists()
    added = writer.post(
        "/api/repos", {"url": url, "visibility_groups": ["team-b", GROUP]}, format="json"
    )
    assert added.status_code == 202 and added.json()["visibility_groups"] == [GROUP, "team-b"]
    ledger = added.json()["id"]
    assert api(corpus.member).get(f"/api/repos/{ledger}").status_code == 200
    assert api(corpus.outsider).get(f"/api/repos/{ledger}").status_code == 404
    # The same URL again, by someone who may not see the copy: refused without naming it.
    corpus.writer.groups.remove(Group.objects.get(name=GROUP), team_b)
    again = writer.post("/api/repos", {"url": url}, format="json")
    assert again.status_code == 409 and not leaks(again.json(), Repository.objects.get(pk=ledger))
    # Once it exists, who sees it is an administrator's decision (issue 33): a writer who can
    # see it may neither open it to everyone nor narrow it, nor learn which groups exist.
    member_writer = api(make_account("write", groups=[GROUP]))
    for groups in ([], [GROUP], ["nope"]):
        refused = member_writer.patch(
            f"/api/repos/{ledger}", {"visibility_groups": groups, "name": "renamed"}, format="json"
        )
        assert refused.status_code == 403, groups
        assert refused.json()["error"]["code"] == "visibility_admin_only"
        assert "only administrators" in refused.json()["error"]["message"]
    assert api(corpus.outsider).get(f"/api/repos/{ledger}").status_code == 404
    assert Repository.objects.get(pk=ledger).name != "renamed"  # nothing of a refused change
    # Sending back the groups it has is no change, and allowed.
    same = member_writer.patch(
        f"/api/repos/{ledger}", {"visibility_groups": ["team-b", GROUP]}, format="json"
    )
    assert same.status_code == 200
    admin = api(make_account("admin"))
    opened = admin.patch(f"/api/repos/{ledger}", {"visibility_groups": []}, format="json")
    assert opened.status_code == 200 and opened.json()["visibility_groups"] == []
    assert api(corpus.outsider).get(f"/api/repos/{ledger}").status_code == 200
    bad = admin.patch(f"/api/repos/{ledger}", {"visibility_groups": ["nope"]}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["details"]["field"] == "visibility_groups"


def _search_command(*args: str) -> str:
    out = io.StringIO()
    call_command("search", f'"{SECRET}"', "--quiet", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_operator_commands_see_everything_unless_told_whose_eyes_to_use(corpus: Corpus) -> None:
    assert "acme/vault:src/vault.py" in _search_command()
    assert _search_command("--user", corpus.outsider.username).strip() == "no results"
    assert "acme/vault" in _search_command("--user", corpus.member.username)
    with pytest.raises(CommandError, match="no active account named 'nobody'"):
        _search_command("--user", "nobody")
    from search.management.viewer_option import viewer_from_options

    outsider = viewer_from_options({"user": corpus.outsider.username})
    with pytest.raises(CommandError, match="no repository 'acme/vault'"):
        find_repository("acme/vault", outsider)
    everything = viewer_from_options({"user": None})
    assert find_repository("acme/vault", everything).pk == corpus.vault.pk


def test_a_fetch_that_meets_a_restricted_copy_does_not_name_it(corpus: Corpus) -> None:
    """A copy added without a branch learns its default branch at fetch time; when a
    restricted repository already indexes that branch, the job's error does not name it."""
    from indexing.services.repositories import default_branch_taken

    Repository.objects.filter(pk=corpus.vault.pk).update(branch="main")
    copy = Repository.objects.create(url=corpus.vault.url, name="copy")
    assert not leaks(default_branch_taken(copy, "main"), corpus.vault)
    assert "restricted" in default_branch_taken(copy, "main")
    corpus.vault.visible_to_groups.clear()
    assert corpus.vault.name in default_branch_taken(copy, "main")  # unrestricted: named
