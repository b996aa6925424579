"""``manage.py import_repos``: every repository of a GitHub organisation, GitLab group or Gitea
organisation, or of a user on any of the three, read from a local server speaking those APIs
(tests/indexing/forge_server.py) over three pages, waiting out a rate limit, refusing a bad token,
naming an account the host does not have, and adding nothing when a page fails.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from accounts.models import AuditEntry
from indexing.models import IndexJob, Repository
from indexing.services.repositories import add_repository
from indexing.services.visibility import visibility_group_names
from tests.indexing.forge_server import (
    ForgeBehaviour,
    ForgeServer,
    gitea_repo,
    github_repo,
    gitlab_project,
)

pytestmark = pytest.mark.django_db
CLONES = "http://127.0.0.1:9"  # clone URLs the listing names (nothing is fetched here)


def run(host: str, owner: str, server: ForgeServer, *extra: str) -> list[str]:
    out, err = StringIO(), StringIO()
    call_command("import_repos", host, owner, "--base-url", server.base_url, *extra,
                 stdout=out, stderr=err)  # fmt: skip
    return out.getvalue().splitlines() + [f"stderr: {line}" for line in err.getvalue().splitlines()]


def github_org() -> list[dict]:
    names = ["api", "web", "docs", "old", "forked", "cli", "infra"]
    return [
        github_repo("acme", name, CLONES, archived=name == "old", fork=name == "forked")
        for name in names
    ]


def test_github_three_pages_a_rate_limit_waited_out_forks_and_archives_skipped(settings) -> None:
    settings.REPO_SEARCH_GITHUB_TOKEN = "good-token"
    Group.objects.create(name="team-a")
    by_hand = add_repository(
        f"{CLONES}/acme/cli.git"
    ).repository  # already indexed: a duplicate, not an error
    behaviour = ForgeBehaviour(page_size=3, rate_limit_page=2)
    with ForgeServer("github", "acme", github_org(), behaviour) as server:
        lines = run("github", "acme", server, "--visibility-groups", "team-a")
    assert server.pages_requested() == [1, 2, 2, 3]  # page 2 asked again after the wait
    limited, retried = server.seen[1], server.seen[2]
    assert retried.at >= int(limited.at) + 1  # not before X-RateLimit-Reset
    assert {seen.headers["authorization"] for seen in server.seen} == {"Bearer good-token"}
    assert server.seen[0].query == {"per_page": "100", "type": "all"}
    assert server.seen[0].headers["accept"] == "application/vnd.github+json"
    assert any(line.startswith("stderr: rate limited by") for line in lines)
    by_kind = {
        line.split()[1]: line.split()[0]
        for line in lines
        if not line.startswith(("github", "stderr"))
    }
    assert by_kind == {
        "acme/api": "add", "acme/web": "add", "acme/docs": "add", "acme/infra": "add",
        "acme/old": "skipped", "acme/forked": "skipped", "acme/cli": "duplicate",
    }  # fmt: skip
    assert "7 listed over 3 pages: 4 add, 1 duplicate, 2 skipped, 0 refused (4 added)" in lines[-2]
    imported = Repository.objects.exclude(pk=by_hand.pk)
    assert sorted(imported.values_list("name", flat=True)) == [
        "acme/api", "acme/docs", "acme/infra", "acme/web"
    ]  # fmt: skip
    assert all(visibility_group_names(r) == ["team-a"] for r in imported)
    assert IndexJob.objects.filter(repository__in=imported).count() == 4
    audited = AuditEntry.objects.filter(action="repository.add", details__via="import_repos")
    assert audited.count() == 4 and audited.first().details["source"] == "github:acme"


def test_a_page_that_uses_up_the_budget_makes_the_next_request_wait_for_the_reset(
    settings,
) -> None:
    settings.REPO_SEARCH_GITHUB_TOKEN = "good-token"
    with ForgeServer("github", "acme", github_org(), ForgeBehaviour(exhaust_page=1)) as server:
        lines = run("github", "acme", server)
    assert server.pages_requested() == [1, 2, 3]  # nothing refused: it waited instead
    assert server.seen[1].at >= int(server.seen[0].at) + 1
    assert any("rate limit of" in line and "is used up" in line for line in lines)
    assert "7 listed over 3 pages" in lines[-2]


def test_gitlab_group_with_subgroups_paged_by_its_headers_and_a_429(settings) -> None:
    settings.REPO_SEARCH_GITLAB_TOKEN = "good-token"
    projects = [
        gitlab_project("acme/platform", name, CLONES, archived=name == "legacy",
                       **({"forked_from_project": {"id": 1}} if name == "fork" else {}))
        for name in ("svc-a", "svc-b", "svc-c", "legacy", "fork", "svc-d", "svc-e")
    ]  # fmt: skip
    behaviour = ForgeBehaviour(page_size=3, rate_limit_page=3)
    with ForgeServer("gitlab", "acme/platform", projects, behaviour) as server:
        lines = run("gitlab", "acme/platform", server, "--include-archived", "--include-forks")
    assert server.pages_requested() == [1, 2, 3, 3]
    assert server.seen[0].path == "/api/v4/groups/acme%2Fplatform/projects"
    assert server.seen[0].query == {"include_subgroups": "true", "per_page": "100"}
    assert {seen.headers["private-token"] for seen in server.seen} == {"good-token"}
    assert server.seen[3].at >= server.seen[2].at + 1  # Retry-After: 1 waited out
    assert "7 listed over 3 pages: 7 add, 0 duplicate, 0 skipped, 0 refused (7 added)" in lines[-2]
    assert Repository.objects.filter(name__startswith="acme/platform/").count() == 7


def test_gitea_org_paged_with_limit_and_page(settings) -> None:
    settings.REPO_SEARCH_GITEA_TOKEN = "good-token"
    repos = [gitea_repo("acme", f"r{i}", CLONES, empty=i == 6) for i in range(7)]
    with ForgeServer("gitea", "acme", repos, ForgeBehaviour(page_size=3)) as server:
        lines = run("gitea", "acme", server, "--dry-run")
    assert [(s.query["limit"], s.query["page"]) for s in server.seen] == [
        ("50", "1"), ("50", "2"), ("50", "3")
    ]  # fmt: skip
    assert {seen.headers["authorization"] for seen in server.seen} == {"token good-token"}
    assert (
        "7 listed over 3 pages: 6 add, 0 duplicate, 1 skipped, 0 refused (dry run, nothing added)"
        in lines[-1]
    )
    assert not Repository.objects.exists()


@pytest.mark.parametrize("host", ["github", "gitlab", "gitea"])
def test_a_refused_token_is_a_clear_error_and_adds_nothing(settings, host: str) -> None:
    setattr(settings, f"REPO_SEARCH_{host.upper()}_TOKEN", "wrong-token")
    make = {"github": github_repo, "gitlab": gitlab_project, "gitea": gitea_repo}[host]
    with (
        ForgeServer(host, "acme", [make("acme", "x", CLONES)]) as server,
        pytest.raises(CommandError) as refused,
    ):
        run(host, "acme", server)
    message = str(refused.value)
    assert "refused the token (401" in message and f"REPO_SEARCH_{host.upper()}_TOKEN" in message
    assert "nothing was added" in message
    assert len(server.seen) == 1 and not Repository.objects.exists()


def test_a_500_on_the_last_page_adds_nothing_from_the_pages_before(settings) -> None:
    settings.REPO_SEARCH_GITHUB_TOKEN = "good-token"
    with (
        ForgeServer("github", "acme", github_org(), ForgeBehaviour(fail_page=3)) as server,
        pytest.raises(CommandError, match=r"answered 500.*nothing was added"),
    ):
        run("github", "acme", server)
    assert server.pages_requested()[:2] == [1, 2] and set(server.pages_requested()[2:]) == {3}
    assert not Repository.objects.exists() and not IndexJob.objects.exists()


def test_the_token_is_never_sent_to_another_server(settings) -> None:
    settings.REPO_SEARCH_GITHUB_TOKEN = "good-token"
    with ForgeServer("github", "acme", []) as elsewhere:
        behaviour = ForgeBehaviour(next_link_origin=elsewhere.base_url)
        with (
            ForgeServer("github", "acme", github_org(), behaviour) as server,
            pytest.raises(CommandError, match="on another server"),
        ):
            run("github", "acme", server)
    assert elsewhere.seen == [] and len(server.seen) == 1
    assert not Repository.objects.exists()


def test_an_unknown_visibility_group_fails_before_any_request(settings) -> None:
    with (
        ForgeServer("github", "acme", github_org()) as server,
        pytest.raises(CommandError, match="no group named 'nobody'"),
    ):
        run("github", "acme", server, "--visibility-groups", "nobody")
    assert server.seen == []


def user_repos(host: str, user: str) -> list[dict]:
    if host == "github":
        owner = {"owner": {"login": user, "type": "User"}}
        return [github_repo(user, f"p{i}", CLONES, **owner) for i in range(7)]
    if host == "gitlab":
        space = {"namespace": {"full_path": user, "kind": "user"}}
        return [gitlab_project(user, f"p{i}", CLONES, **space) for i in range(7)]
    return [gitea_repo(user, f"p{i}", CLONES, owner={"login": user}) for i in range(7)]


USER_PATHS = {
    "github": ("/orgs/alice/repos", "/users/alice/repos"),
    "gitlab": ("/api/v4/groups/alice/projects", "/api/v4/users/alice/projects"),
    "gitea": ("/api/v1/orgs/alice/repos", "/api/v1/users/alice/repos"),
}


@pytest.mark.parametrize("host", ["github", "gitlab", "gitea"])
def test_a_users_repositories_over_three_pages_and_a_rate_limit(settings, host: str) -> None:
    setattr(settings, f"REPO_SEARCH_{host.upper()}_TOKEN", "good-token")
    behaviour = ForgeBehaviour(page_size=3, rate_limit_page=2)
    with ForgeServer(host, "alice", user_repos(host, "alice"), behaviour, account="user") as server:
        lines = run(host, "alice", server)
    org_path, user_path = USER_PATHS[host]
    # Asked as an organisation (group) first; its 404 sends the command to the user's endpoint.
    assert [seen.path for seen in server.seen] == [org_path] + [user_path] * 4
    assert server.pages_requested()[1:] == [1, 2, 2, 3]  # page 2 again after the rate limit
    assert server.seen[3].at >= int(server.seen[2].at) + 1  # waited for the reset / Retry-After
    assert (
        server.seen[1].query
        == {
            "github": {"per_page": "100", "type": "owner"},
            "gitlab": {"per_page": "100"},
            "gitea": {"limit": "50", "page": "1"},
        }[host]
    )
    assert any(line.startswith("stderr: rate limited by") for line in lines)
    assert f"{host} user alice at {server.base_url}: 7 listed over 3 pages: 7 add" in lines[-2]
    names = sorted(Repository.objects.values_list("name", flat=True))
    assert names == [f"alice/p{i}" for i in range(7)]
    assert IndexJob.objects.count() == 7


def test_account_user_asks_only_the_users_endpoint(settings) -> None:
    settings.REPO_SEARCH_GITLAB_TOKEN = "good-token"
    repos = user_repos("gitlab", "alice")
    with ForgeServer("gitlab", "alice", repos, account="user") as server:
        lines = run("gitlab", "alice", server, "--account", "user", "--dry-run")
    assert {seen.path for seen in server.seen} == {"/api/v4/users/alice/projects"}
    assert "gitlab user alice" in lines[-1] and "(dry run, nothing added)" in lines[-1]
    assert not Repository.objects.exists()


@pytest.mark.parametrize(
    ("host", "kinds", "said"),
    [
        ("github", "organisation or user", "Not Found"),
        ("gitlab", "group or user", "404 User Not Found"),
        ("gitea", "organisation or user", "The target couldn't be found."),
    ],
)
def test_an_unknown_account_is_named_with_what_the_host_said_and_adds_nothing(
    settings, host: str, kinds: str, said: str
) -> None:
    setattr(settings, f"REPO_SEARCH_{host.upper()}_TOKEN", "good-token")
    with (
        ForgeServer(host, "alice", user_repos(host, "alice"), account="user") as server,
        pytest.raises(CommandError) as refused,
    ):
        run(host, "nobody", server)
    message = str(refused.value)
    title = {"github": "GitHub", "gitlab": "GitLab", "gitea": "Gitea"}[host]
    assert f"{title} at {server.base_url} has no {kinds} named 'nobody'" in message
    assert f"(404 {said})" in message and message.endswith("nothing was added")
    assert "private one needs" not in message  # a token was sent
    assert len(server.seen) == 2 and not Repository.objects.exists()


def test_an_unknown_user_without_a_token_says_which_setting_a_private_one_needs(settings) -> None:
    settings.REPO_SEARCH_GITHUB_TOKEN = ""
    behaviour = ForgeBehaviour(token="")
    with (
        ForgeServer("github", "acme", github_org(), behaviour) as server,
        pytest.raises(CommandError, match="has no user named 'ghost' \\(a private one needs "
                      "REPO_SEARCH_GITHUB_TOKEN\\)"),
    ):  # fmt: skip
        run("github", "ghost", server, "--account", "user")
    assert [seen.path for seen in server.seen] == ["/users/ghost/repos"]
    assert "authorization" not in server.seen[0].headers
