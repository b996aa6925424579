"""What a repository's source is, whatever the spelling of its URL: one string per source.

Two clone URLs that reach the same repository must not make two repositories, or a writer
could add a restricted repository again under another spelling and publish it. The identity
of a URL checked by ``indexing.git.url_safety.check_repository_url`` (which already lower-cased
the host, dropped credentials, default ports and the trailing slash, and resolved a local path
to its real path):

- remote: ``host[:port]/path`` — the scheme dropped (``http``, ``https`` and ``git`` reach one
  repository), ``www.`` dropped for the code hosts we know, the path percent-decoded, its
  repeated and trailing slashes and a ``.git`` suffix dropped, and lower-cased: GitHub, GitLab,
  Gitea/Forgejo and Bitbucket ignore the case of owner and repository names, and a self-hosted
  one on any domain may too, so a case-sensitive host's ``Foo`` and ``foo`` count as one;
- local: ``file:`` + the real path, without a trailing ``/.git`` (a working copy and its
  ``.git`` directory are one repository).

A pure function of the URL (no file system, no network), so the model can keep it as a column.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from indexing.upstream_urls import host_kind

DEFAULT_PORTS = {"https": 443, "http": 80, "git": 9418}
_SLASHES = re.compile(r"/{2,}")


def _clean_path(path: str) -> str:
    path = _SLASHES.sub("/", path).strip("/")
    return path.removesuffix(".git").rstrip("/")


def source_identity(url: str) -> str:
    """The identity of a (checked) clone URL or ``file:`` URL; equal for equal sources."""
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme.lower() == "file" or url.startswith("/"):
        path = _SLASHES.sub("/", unquote(parts.path)).rstrip("/")
        path = path.removesuffix("/.git")
        return "file:" + (path or "/")
    host = (parts.hostname or "").rstrip(".").lower()
    if host.startswith("www.") and host_kind(host) is not None:
        host = host.removeprefix("www.")
    try:
        port = parts.port
    except ValueError:
        port = None
    if port == DEFAULT_PORTS.get(parts.scheme.lower()):
        port = None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    return f"{netloc}/{_clean_path(unquote(parts.path)).lower()}"
