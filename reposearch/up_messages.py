"""What ``make up`` prints once the site answers: the addresses to open, where the first
administrator's password is, how to add people, and the command prefix that reaches the same
servers (``REPO_SEARCH_DATA_DIR`` and the ports, when they were given)."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from typing import Any

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
EVERY_ADDRESS = ("0.0.0.0", "::", "")  # noqa: S104 - bind addresses recognised, not bound


def browsable_host(host: str) -> str:
    host = host.strip("[]")
    if host in EVERY_ADDRESS:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def _initial_admin_file(settings: Any) -> str:
    from accounts.first_run import initial_admin_path

    return str(initial_admin_path(settings.REPO_SEARCH_DATA_DIR))


def ready_lines(settings: Any, healthy: bool) -> list[str]:
    """What ``make up`` prints once the site answers: the URLs to open, how to add people and
    give them roles (``accounts.first_run.people_lines``)."""
    from accounts.first_run import people_lines

    host = settings.REPO_SEARCH_BIND_HOST
    base = f"http://{browsable_host(host)}:{settings.REPO_SEARCH_BIND_PORT}"
    state = "ready" if healthy else "started, but /api/health does not answer 200 yet"
    people = people_lines(f"{command_prefix()}{_relative(sys.executable)} manage.py", base)
    lines = [
        f"reposearch is {state}:",
        f"  web UI    {base}/",
        f"  API docs  {base}/api/docs",
        f"  admin     {base}/admin/",
        f"  health    {base}/api/health",
        f"  MCP       {base}/mcp",
        f"sign in as admin: password and API token in {_initial_admin_file(settings)}",
        *people,
        "press Ctrl-C to stop everything",
    ]
    if host.strip("[]") in EVERY_ADDRESS:  # other machines may reach it too
        lines.insert(
            -1 - len(people),
            "other machines may use: "
            + (", ".join(h for h in settings.ALLOWED_HOSTS if h not in LOOPBACK_NAMES) or "none")
            + " (ALLOWED_HOSTS lists the names or addresses they may type)",
        )
    return lines


SAME_SERVER_VARIABLES = (
    "DJANGO_SETTINGS_MODULE",
    "REPO_SEARCH_DATA_DIR",
    "REPO_SEARCH_PG_PORT",
    "REPO_SEARCH_REDIS_PORT",
)


def command_prefix() -> str:
    """The variables a command needs to reach the same servers, as ``NAME=value `` words."""
    from reposearch.startup import GIVEN_SETTINGS_MODULE

    words = []
    for name in SAME_SERVER_VARIABLES:
        value = GIVEN_SETTINGS_MODULE if name == "DJANGO_SETTINGS_MODULE" else os.environ.get(name)
        if value:
            words.append(f"{name}={shlex.quote(value)} ")
    for name in ("DATABASE_URL", "REDIS_URL"):
        if os.environ.get(name):
            words.append(f"{name}=<the same {name}> ")
    return "".join(words)


def _relative(path: str) -> str:
    with contextlib.suppress(ValueError):
        relative = os.path.relpath(path)
        if not relative.startswith(".."):
            return relative
    return path
