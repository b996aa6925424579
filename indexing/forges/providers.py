"""Each git host's list endpoint, authentication header and repository JSON.

- GitHub: ``GET /orgs/{org}/repos?per_page=100`` (``clone_url``, ``default_branch``,
  ``archived``, ``fork``, ``full_name``), ``Authorization: Bearer``; GitHub Enterprise:
  ``--base-url https://host/api/v3``.
- GitLab: ``GET /api/v4/groups/{id or url-encoded path}/projects?include_subgroups=true&per_page=100``
  (``http_url_to_repo``, ``default_branch``, ``archived``, ``forked_from_project``,
  ``path_with_namespace``), ``PRIVATE-TOKEN``.
- Gitea / Forgejo: ``GET /api/v1/orgs/{org}/repos?limit=50&page=N`` (``clone_url``,
  ``default_branch``, ``archived``, ``fork``, ``empty``, ``full_name``), ``Authorization: token``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from indexing.forges.client import ForgeClient, ForgeError


@dataclass(frozen=True)
class ListedRepository:
    full_name: str
    clone_url: str
    default_branch: str
    archived: bool
    fork: bool
    empty: bool = False


@dataclass(frozen=True)
class Forge:
    name: str
    default_base_url: str
    env_name: str  # the setting (environment variable) holding its API token
    auth_headers: Callable[[str], dict[str, str]]
    list_path: Callable[[str], str]
    params: dict[str, Any]
    per_page_key: str
    parse: Callable[[dict[str, Any]], ListedRepository]


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
        default_base_url="https://api.github.com",
        env_name="REPO_SEARCH_GITHUB_TOKEN",
        auth_headers=lambda token: {"Authorization": f"Bearer {token}"},
        list_path=lambda org: f"/orgs/{quote(org, safe='')}/repos",
        params={"per_page": 100, "type": "all"},
        per_page_key="per_page",
        parse=_github,
    ),
    "gitlab": Forge(
        name="gitlab",
        default_base_url="https://gitlab.com",
        env_name="REPO_SEARCH_GITLAB_TOKEN",
        auth_headers=lambda token: {"PRIVATE-TOKEN": token},
        list_path=lambda group: f"/api/v4/groups/{quote(group, safe='')}/projects",
        params={"include_subgroups": "true", "per_page": 100},
        per_page_key="per_page",
        parse=_gitlab,
    ),
    "gitea": Forge(
        name="gitea",
        default_base_url="https://gitea.com",
        env_name="REPO_SEARCH_GITEA_TOKEN",
        auth_headers=lambda token: {"Authorization": f"token {token}"},
        list_path=lambda org: f"/api/v1/orgs/{quote(org, safe='')}/repos",
        params={"limit": 50, "page": 1},
        per_page_key="limit",
        parse=_gitea,
    ),
}
GITHUB_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}


def list_repositories(client: ForgeClient, forge: Forge, owner: str) -> list[ListedRepository]:
    """Every repository of ``owner``, all pages read before anything is returned."""
    listed: list[ListedRepository] = []
    for page in client.paged(forge.list_path(owner), forge.params, forge.per_page_key):
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
        base_url or forge.default_base_url, headers, token_setting=forge.env_name, **options
    )
