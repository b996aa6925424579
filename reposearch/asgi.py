"""ASGI entry point: the Django site, with the MCP server's streamable HTTP endpoint at ``/mcp``.

Django runs as its WSGI application in a thread pool (``a2wsgi``), as it did under gunicorn's
threads: under Django's own ASGI handler every synchronous view of a process shares one
thread, so one slow ``/api/ask`` would hold up every other request. ``/mcp`` and the ASGI
lifespan (which starts the MCP session manager) go to the MCP app (POST only, with the site's
security headers: ``reposearch/mcp_edge.py``). Every request's body has
arrived, whole and in time, before either sees it (``reposearch/request_bodies.py``): a client
that sends half a body holds no thread.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

from reposearch.startup import load_settings_or_exit

load_settings_or_exit()

import django  # noqa: E402 - settings must load first

# The body gate below imports models (token checks): the apps must be loaded before it is.
django.setup(set_prefix=False)

from a2wsgi import WSGIMiddleware  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from reposearch.mcp_edge import mcp_edge  # noqa: E402
from reposearch.request_bodies import BodyGate  # noqa: E402
from search.ask.disconnects import watch as watch_disconnects  # noqa: E402
from search.mcp.http import MCP_PATH, authenticated, build_http_app  # noqa: E402

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def build_application(django_threads: int = 8) -> BodyGate:
    """The site's ASGI app (a new MCP session manager each time: one per server)."""
    django_app: Any = WSGIMiddleware(get_wsgi_application(), workers=django_threads)  # type: ignore[arg-type]
    django_app = watch_disconnects(django_app)  # a streamed ask stops when its client leaves
    mcp_app = build_http_app()
    guarded_mcp = mcp_edge(authenticated(mcp_app))  # security headers; POST only

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "lifespan":
            await mcp_app(scope, receive, send)
        elif scope["type"] == "http" and (path == MCP_PATH or path.startswith(MCP_PATH + "/")):
            await guarded_mcp(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return BodyGate(application)


def _warm_up_search() -> None:
    """Beside the first requests (the work releases the GIL), not inside the first search: build
    the full-text ranking's compiled loops, then load the built-in models a search runs (the
    embedding model; the cross-encoder when it is on; ``REPO_SEARCH_LOAD_MODELS_AT_START``),
    which would cost that search about a second."""

    def warm_up() -> None:
        from django.conf import settings
        from django.db import connections

        from llm import load_local_models
        from search.retrieval.postings_memory import warm_up as build_loops

        build_loops()
        if settings.REPO_SEARCH_LOAD_MODELS_AT_START:
            try:  # the model configuration in force is read from the database
                load_local_models(cross_encoder=bool(settings.REPO_SEARCH_CROSS_ENCODER))
            finally:
                connections.close_all()  # this thread's own, not left open for the process's life

    threading.Thread(target=warm_up, name="warm-up-search", daemon=True).start()


application = build_application()
_warm_up_search()
