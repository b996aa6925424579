"""Links to a file on the repository's own host (GitHub, GitLab, Gitea, Bitbucket) at a commit.

The host is recognised from the clone URL; for any other host there is no link (a guess would
send people to a 404). Credentials and ``.git`` are dropped from the URL.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

GITHUB_HOSTS = frozenset({"github.com", "www.github.com"})
GITLAB_HOSTS = frozenset({"gitlab.com", "www.gitlab.com"})
GITEA_HOSTS = frozenset({"codeberg.org", "gitea.com", "try.gitea.io"})
BITBUCKET_HOSTS = frozenset({"bitbucket.org", "www.bitbucket.org"})


def host_kind(host: str) -> str | None:
    """``github``, ``gitlab``, ``gitea``, ``bitbucket`` or None for a host we cannot link to."""
    host = host.lower()
    if host in GITHUB_HOSTS:
        return "github"
    if host in GITLAB_HOSTS or host.startswith("gitlab."):
        return "gitlab"
    if host in GITEA_HOSTS or host.startswith(("gitea.", "forgejo.")):
        return "gitea"
    if host in BITBUCKET_HOSTS:
        return "bitbucket"
    return None


def _web_base(clone_url: str) -> tuple[str, str] | None:
    """(kind, https://host/owner/repo) for a clone URL on a known host."""
    if "://" not in clone_url and ":" in clone_url and "@" in clone_url.split(":", 1)[0]:
        user_host, _, path = clone_url.partition(":")  # scp-like git@github.com:owner/repo.git
        clone_url = f"https://{user_host.rsplit('@', 1)[1]}/{path}"
    parts = urlsplit(clone_url)
    if parts.scheme not in ("http", "https", "git", "ssh") or not parts.hostname:
        return None
    kind = host_kind(parts.hostname)
    path = parts.path.strip("/").removesuffix(".git").strip("/")
    if kind is None or path.count("/") < 1:
        return None
    port = f":{parts.port}" if parts.port and parts.scheme in ("http", "https") else ""
    scheme = parts.scheme if parts.scheme in ("http", "https") else "https"
    return kind, f"{scheme}://{parts.hostname}{port}/{path}"


def upstream_file_url(
    clone_url: str,
    commit: str,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
) -> str | None:
    """The file at ``commit`` on the repository's host, with the line range; None if unknown."""
    base = _web_base(clone_url)
    if base is None or not commit or not path:
        return None
    kind, web = base
    quoted_path = quote(path)
    commit = quote(commit)
    anchor = ""
    if start_line:
        end = end_line if end_line and end_line > start_line else None
        anchor = {
            "github": f"#L{start_line}" + (f"-L{end}" if end else ""),
            "gitlab": f"#L{start_line}" + (f"-{end}" if end else ""),
            "gitea": f"#L{start_line}" + (f"-L{end}" if end else ""),
            "bitbucket": f"#lines-{start_line}" + (f":{end}" if end else ""),
        }[kind]
    route = {
        "github": f"/blob/{commit}/{quoted_path}",
        "gitlab": f"/-/blob/{commit}/{quoted_path}",
        "gitea": f"/src/commit/{commit}/{quoted_path}",
        "bitbucket": f"/src/{commit}/{quoted_path}",
    }[kind]
    return web + route + anchor


def upstream_history_url(clone_url: str, commit: str, path: str) -> str | None:
    """The commits that touched ``path`` up to ``commit`` on the repository's host (its whole
    history, where reposearch's shallow clone holds only the newest); None if unknown."""
    base = _web_base(clone_url)
    if base is None or not commit or not path:
        return None
    kind, web = base
    quoted_path, commit = quote(path), quote(commit)
    route = {
        "github": f"/commits/{commit}/{quoted_path}",
        "gitlab": f"/-/commits/{commit}/{quoted_path}",
        "gitea": f"/commits/commit/{commit}/{quoted_path}",
        "bitbucket": f"/history-node/{commit}/{quoted_path}",
    }[kind]
    return web + route
