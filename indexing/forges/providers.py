"""Each git host's list endpoints, authentication header and repository JSON.

An owner is an organisation (GitLab: a group) or a user; each host has an endpoint for either,
tried in that order unless the account kind is given (a 404 from the first moves to the next):

- GitHub: ``GET /orgs/{org}/repos?per_page=100&type=all`` or
  ``GET /users/{user}/repos?per_page=100&type=owner`` (``clone_url``, ``default_branch``,
  ``archived``, ``fork``, ``full_name``), ``Authorization: Bearer``; GitHub Enterprise:
  ``--base-url https://host/api/v3``.
- GitLab: ``GET /api/v4/groups/{id or url-encoded path}/projects?include_subgroups=true&per_page=100``
  or ``GET /api/v4/users/{id or username}/projects?per_page=100`` (``http_url_to_repo``,
  ``default_branch``, ``archived``, ``forked_from_project``, ``path_with_namespace``),
  ``PRIVATE-TOKEN``.
- Gitea / Forgejo: ``GET /api/v1/orgs/{org}/repos?limit=50&page=N`` or
  ``GET /api/v1/users/{user}/repos?limit=50&page=N`` (``clone_url``, ``default_branch``,
  ``archived``, ``fork``, ``empty``, ``full_name``), ``Authorization: token``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from indexing.forges.client import ForgeClient, ForgeError, ForgeNotFound


@dataclass(frozen=True)
class ListedRepository:
    full_name: str
    clone_url: str
    default_branch: str
    archived: bool
    fork: bool
    empty: bool = False


@dataclass(frozen=True)
class Account:
    """One kind of owner on a host and the endpoint listing its repositories."""

    kind: str  # "organisation", "group" or "user"
    path: str  # the list endpoint, with {owner} for the url-encoded owner
    params: dict[str, Any]

    def list_path(self, owner: str) -> str:
        return self.path.format(owner=quote(owner, safe=""))


@dataclass(frozen=True)
class Forge:
    name: str
    title: str
    default_base_url: str
    env_name: str  # the setting (environment variable) holding its API token
    auth_headers: Callable[[str], dict[str, str]]
    accounts: tuple[Account, ...]  # tried in this order when the kind is not given
    per_page_key: str
    parse: Callable[[dict[str, Any]], ListedRepository]

    def account(self, kind: str) -> Account:
        """``user``, or else the host's organisation-like account (organisation, group)."""
        return next(a for a in self.accounts if (a.kind == "user") == (kind == "user"))


@dataclass(frozen=True)
class Listing:
    account: Account
    owner: str
    repositories: list[ListedRepository]


def _github(item: dict[str, Any]) -> ListedRepository:
    return ListedRepository(
        full_name=str(item["full_name"]),
        clone_url=str(item["clone_url"]),
        default_branch=str(item.get("default_branch") or ""),
        archived=bool(item.get("archived")),
        fork=bool(item.get("fork")),
    )


def _gitlab(item: dict[str, Any]) -> ListedRepository:
    return ListedRepository(
        full_name=str(item["path_with_namespace"]),
        clone_url=str(item["http_url_to_repo"]),
        default_branch=str(item.get("default_branch") or ""),
        archived=bool(item.get("archived")),
        fork=bool(item.get("forked_from_project")),
        empty=bool(item.get("empty_repo")),
    )


def _gitea(item: dict[str, Any]) -> ListedRepository:
    return ListedRepository(
        full_name=str(item["full_name"]),
        clone_url=str(item["clone_url"]),
        default_branch=str(item.get("default_branch") or ""),
        archived=bool(item.get("archived")),
        fork=bool(item.get("fork")),
        empty=bool(item.get("empty")),
    )


FORGES: dict[str, Forge] = {
    "github": Forge(
        name="github",
        title="GitHub",
        default_base_url="https://api.github.com",
        env_name="REPO_SEARCH_GITHUB_TOKEN",
        auth_headers=lambda token: {"Authorization": f"Bearer {token}"},
        accounts=(
            Account("organisation", "/orgs/{owner}/repos", {"per_page": 100, "type": "all"}),
            Account("user", "/users/{owner}/repos", {"per_page": 100, "type": "owner"}),
        ),
        per_page_key="per_page",
        parse=_github,
    ),
    "gitlab": Forge(
        name="gitlab",
        title="GitLab",
        default_base_url="https://gitlab.com",
        env_name="REPO_SEARCH_GITLAB_TOKEN",
        auth_headers=lambda token: {"PRIVATE-TOKEN": token},
        accounts=(
            Account(
                "group",
                "/api/v4/groups/{owner}/projects",
                {"include_subgroups": "true", "per_page": 100},
            ),
            Account("user", "/api/v4/users/{owner}/projects", {"per_page": 100}),
        ),
        per_page_key="per_page",
        parse=_gitlab,
    ),
    "gitea": Forge(
        name="gitea",
        title="Gitea",
        default_base_url="https://gitea.com",
        env_name="REPO_SEARCH_GITEA_TOKEN",
        auth_headers=lambda token: {"Authorization": f"token {token}"},
        accounts=(
            Account("organisation", "/api/v1/orgs/{owner}/repos", {"limit": 50, "page": 1}),
            Account("user", "/api/v1/users/{owner}/repos", {"limit": 50, "page": 1}),
        ),
        per_page_key="limit",
        parse=_gitea,
    ),
}
GITHUB_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}


def list_repositories(
    client: ForgeClient, forge: Forge, owner: str, kind: str | None = None
) -> Listing:
    """Every repository of ``owner``, all pages read before anything is returned.

    ``kind`` (``org``, ``user``): that account's endpoint only; ``None``: each in turn, the
    next one asked only when the one before answers its first page 404.
    """
    accounts = [forge.account(kind)] if kind else list(forge.accounts)
    refusals: list[str] = []
    for account in accounts:
        try:
            return Listing(account, owner, _read_all(client, forge, account, owner))
        except ForgeNotFound as not_found:
            if client.pages:  # a later page vanished: not a question of which account
                raise
            refusals.append(str(not_found))
    kinds = " or ".join(account.kind for account in accounts)
    hint = "" if client.has_token else f" (a private one needs {forge.env_name})"
    raise ForgeNotFound(
        f"{forge.title} at {client.base_url} has no {kinds} named {owner!r}{hint}: "
        + "; ".join(refusals)
    )


def _read_all(
    client: ForgeClient, forge: Forge, account: Account, owner: str
) -> list[ListedRepository]:
    listed: list[ListedRepository] = []
    for page in client.paged(account.list_path(owner), account.params, forge.per_page_key):
        for item in page:
            try:
                listed.append(forge.parse(item))
            except (KeyError, TypeError, AttributeError):
                raise ForgeError(
                    f"{client.base_url} answered a repository without the fields of the "
                    f"{forge.name} API: {str(item)[:200]}"
                ) from None
    return listed


def forge_client(
    forge: Forge, base_url: str | None, token: str | None, **options: Any
) -> ForgeClient:
    headers = {"User-Agent": "reposearch-import"}
    if forge.name == "github":
        headers.update(GITHUB_HEADERS)
    if token:
        headers.update(forge.auth_headers(token))
    return ForgeClient(
        base_url or forge.default_base_url,
        headers,
        token_setting=forge.env_name,
        has_token=bool(token),
        **options,
    )
