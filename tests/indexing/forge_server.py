"""A local HTTP server speaking the list endpoints of GitHub, GitLab and Gitea as they answer
on the wire: their JSON shapes, page headers (``Link``, ``X-Next-Page``, ``X-Total-Count``),
authentication headers and failure modes (401, a rate limit, a 500 on one page, each host's own
404 body for an account it does not have).

The owner is an organisation (GitLab: a group) or, with ``account="user"``, a user: served at
``/orgs/{org}/repos`` or ``/users/{user}/repos`` (GitHub), ``/api/v4/groups/{group}/projects``
or ``/api/v4/users/{user}/projects`` (GitLab), ``/api/v1/orgs/{org}/repos`` or
``/api/v1/users/{user}/repos`` (Gitea); any other path is that host's 404.

Like the real hosts, it caps the page size (``page_size``; GitHub and GitLab at 100, Gitea's
``MAX_RESPONSE_ITEMS`` at 50), so a test gets three pages out of a handful of repositories.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


@dataclass
class Seen:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    at: float


@dataclass
class ForgeBehaviour:
    token: str = "good-token"  # "": no token needed (public accounts, anonymous)
    page_size: int = 3
    rate_limit_page: int | None = None  # first request for this page is rate limited (once)
    fail_page: int | None = None  # this page always answers 500
    next_link_origin: str | None = None  # send rel="next" links to another server
    exhaust_page: int | None = None  # this page's 200 uses the last request of the budget
    limited: set[int] = field(default_factory=set)


def github_repo(org: str, name: str, clone_base: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": abs(hash(name)) % 10**6, "node_id": "R_x", "name": name, "full_name": f"{org}/{name}",
        "private": False, "owner": {"login": org, "type": "Organization"},
        "html_url": f"https://github.com/{org}/{name}", "fork": False,
        "url": f"https://api.github.com/repos/{org}/{name}",
        "clone_url": f"{clone_base}/{org}/{name}.git", "ssh_url": f"git@github.com:{org}/{name}.git",
        "default_branch": "main", "archived": False, "disabled": False, "visibility": "public",
        **extra,
    }  # fmt: skip


def gitlab_project(group: str, name: str, clone_base: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": abs(hash(name)) % 10**6, "name": name, "path": name,
        "path_with_namespace": f"{group}/{name}", "name_with_namespace": f"{group} / {name}",
        "http_url_to_repo": f"{clone_base}/{group}/{name}.git",
        "ssh_url_to_repo": f"git@gitlab.com:{group}/{name}.git",
        "web_url": f"https://gitlab.com/{group}/{name}", "default_branch": "main",
        "archived": False, "visibility": "public", "empty_repo": False,
        "namespace": {"full_path": group, "kind": "group"},
        **extra,
    }  # fmt: skip


def gitea_repo(org: str, name: str, clone_base: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": abs(hash(name)) % 10**6, "name": name, "full_name": f"{org}/{name}",
        "owner": {"login": org}, "private": False, "fork": False, "mirror": False,
        "empty": False, "archived": False, "html_url": f"https://gitea.com/{org}/{name}",
        "clone_url": f"{clone_base}/{org}/{name}.git", "ssh_url": f"git@gitea.com:{org}/{name}.git",
        "default_branch": "main",
        **extra,
    }  # fmt: skip


# Where each host's API paths start: a request elsewhere is not a forge client's.
API_ROOTS = {"github": ("/orgs/", "/users/"), "gitlab": ("/api/v4/",), "gitea": ("/api/v1/",)}


class ForgeServer:
    """Serves ``repositories`` (already in the host's JSON shape) for one owner."""

    def __init__(self, kind: str, owner: str, repositories: list[dict[str, Any]],
                 behaviour: ForgeBehaviour | None = None, account: str = "org") -> None:  # fmt: skip
        self.kind = kind
        self.owner = owner
        self.account = account
        self.repositories = repositories
        self.behaviour = behaviour or ForgeBehaviour()
        self.seen: list[Seen] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server._answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> ForgeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # --- the wire ---------------------------------------------------------------------------

    def _list_path(self) -> str:
        owner = self.owner.replace("/", "%2F")
        if self.account == "user":
            return {
                "github": f"/users/{owner}/repos",
                "gitlab": f"/api/v4/users/{owner}/projects",
                "gitea": f"/api/v1/users/{owner}/repos",
            }[self.kind]
        return {
            "github": f"/orgs/{owner}/repos",
            "gitlab": f"/api/v4/groups/{owner}/projects",
            "gitea": f"/api/v1/orgs/{owner}/repos",
        }[self.kind]

    def _not_found(self, path: str) -> dict[str, Any]:
        """The body each host answers a 404 with (for an account it does not have)."""
        if self.kind == "github":
            which = "user" if path.startswith("/users/") else "organization"
            return {"message": "Not Found", "status": "404",
                    "documentation_url": f"https://docs.github.com/rest/repos/repos#list-{which}-repositories"}  # fmt: skip
        if self.kind == "gitlab":
            if path.startswith("/api/v4/users/"):
                return {"message": "404 User Not Found"}
            if path.startswith("/api/v4/groups/"):
                return {"message": "404 Group Not Found"}
            return {"error": "404 Not Found"}
        name = path.split("/")[4] if path.count("/") >= 4 else ""
        error = (
            f"user redirect does not exist [name: {name}]"
            if path.startswith("/api/v1/users/")
            else f"org does not exist [id: 0, name: {name}]"
        )
        return {"errors": [error], "message": "The target couldn't be found.",
                "url": f"{self.base_url}/api/swagger"}  # fmt: skip

    def _authorised(self, headers: dict[str, str]) -> bool:
        token = self.behaviour.token
        if not token:  # anonymous access to public accounts
            return True
        if self.kind == "github":
            return headers.get("authorization") in (f"Bearer {token}", f"token {token}")
        if self.kind == "gitlab":
            return headers.get("private-token") == token
        return headers.get("authorization") == f"token {token}"

    def _send(self, handler: BaseHTTPRequestHandler, status: int, body: Any,
              headers: dict[str, str] | None = None) -> None:  # fmt: skip
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        headers = {name.lower(): value for name, value in handler.headers.items()}
        if not parts.path.startswith(API_ROOTS[self.kind]):
            # Not a forge API call, so not the import's: another process's request to a port
            # it had used before this server took it (seen in CI: an OpenID discovery).
            self._send(handler, 404, {"message": "Not Found"})
            return
        self.seen.append(Seen(parts.path, query, headers, time.time()))
        behaviour = self.behaviour
        if not self._authorised(headers):  # a bad token is refused on any path, as the hosts do
            message = {"github": "Bad credentials", "gitlab": "401 Unauthorized",
                       "gitea": "user does not exist [uid: 0, name: ]"}[self.kind]  # fmt: skip
            self._send(handler, 401, {"message": message})
            return
        if parts.path != self._list_path():
            self._send(handler, 404, self._not_found(parts.path))
            return
        size_key = "limit" if self.kind == "gitea" else "per_page"
        page = int(query.get("page", "1"))
        size = min(int(query.get(size_key, "30")), behaviour.page_size)
        if behaviour.rate_limit_page == page and page not in behaviour.limited:
            behaviour.limited.add(page)
            if self.kind == "github":
                self._send(handler, 403, {"message": "API rate limit exceeded for installation."},
                           {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
                            "X-RateLimit-Used": "5000",
                            "X-RateLimit-Reset": str(int(time.time()) + 1)})  # fmt: skip
            else:
                self._send(handler, 429, {"message": "Retry later"}, {"Retry-After": "1"})
            return
        if behaviour.fail_page == page:
            self._send(handler, 500, {"message": "500 Internal Server Error"})
            return
        start = (page - 1) * size
        items = self.repositories[start : start + size]
        pages = max(1, -(-len(self.repositories) // size))
        answer: dict[str, str] = {}
        origin = behaviour.next_link_origin or self.base_url
        links = []
        if page < pages:
            links.append(
                f'<{origin}{parts.path}?{urlencode({**query, "page": page + 1})}>; rel="next"'
            )
        links.append(
            f'<{self.base_url}{parts.path}?{urlencode({**query, "page": pages})}>; rel="last"'
        )
        answer["Link"] = ", ".join(links)
        if self.kind == "github":
            exhausted = behaviour.exhaust_page == page
            answer.update({"X-RateLimit-Limit": "5000",
                           "X-RateLimit-Remaining": "0" if exhausted else "4990",
                           "X-RateLimit-Reset": str(int(time.time()) + (1 if exhausted else 3600))})  # fmt: skip
        elif self.kind == "gitlab":
            answer.update({"X-Page": str(page), "X-Per-Page": str(size),
                           "X-Next-Page": str(page + 1) if page < pages else "",
                           "X-Prev-Page": str(page - 1) if page > 1 else "",
                           "X-Total": str(len(self.repositories)), "X-Total-Pages": str(pages)})  # fmt: skip
        else:
            answer["X-Total-Count"] = str(len(self.repositories))
        self._send(handler, 200, items, answer)

    def pages_requested(self) -> list[int]:
        return [int(seen.query.get("page", "1")) for seen in self.seen]
