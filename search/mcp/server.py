"""The MCP server object: tool registration with descriptions, schemas and read-only hints
(every tool but ``refresh_repository``, which queues work).

Tools are synchronous (the SDK runs them in a worker thread); each one closes its thread's
database connection when done, so a pool of worker threads never holds idle connections.
Bad input comes back as a tool error (``isError``) whose text is the JSON from
``search.mcp.tools.ToolInputError``; argument type errors are the SDK's own validation messages.

Every tool runs as ``search.mcp.identity.current_viewer()``: the account of the stdio session
(``manage.py mcp --user``) or of the HTTP request's token, unrestricted repositories only when
nobody said.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from django.db import connection
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from search.mcp import locate_tool, navigation_tools, refresh, tools
from search.mcp.budget import DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS, compact_json
from search.mcp.identity import current_viewer

# What a tool returns: its dict as structured content (the output schema is the dict's).
Answer = Annotated[CallToolResult, dict[str, Any]]
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
# Queues work (never deletes anything); asking twice is harmless (coalesced).
QUEUES_WORK = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
BUDGET = (
    f"Most tokens the answer may take, {MIN_MAX_TOKENS}..{MAX_MAX_TOKENS} "
    f"(default {DEFAULT_MAX_TOKENS}); shorter snippets, then fewer results, to fit."
)
INSTRUCTIONS = (
    "reposearch searches the code of the repositories indexed on this server. "
    "Use search_code to find where something is implemented; each hit has 'location' "
    "(path:start-end), the symbol, a snippet and the indexed commit. Read around a hit with "
    "get_file(repo, path, start_line, end_line). list_repositories names what is indexed; "
    "find_symbol / find_references navigate definitions and uses; list_files lists files. "
    "Given an issue or a stack trace, locate_issue names the files and functions to change. "
    "Every tool only reads, except refresh_repository, which queues a re-index of a repository "
    "(write role needed). Answers fit max_tokens (default about 6,000); when they are cut, "
    "truncated is true and next_cursor (search_code) or next_start_line (get_file) goes on."
)


def _refuse_nul(fn: Callable[..., dict[str, Any]], args: tuple[Any, ...]) -> None:
    """No argument may hold a NUL character: PostgreSQL text cannot, and a query with one would
    fail in the database instead of as the caller's mistake."""
    names = list(inspect.signature(fn).parameters)
    for name, value in zip(names, args, strict=False):
        if isinstance(value, str) and "\x00" in value:
            raise tools.ToolInputError(
                "invalid_argument",
                f"{name} contains a NUL character",
                "text without NUL (\\u0000) characters",
                {"field": name},
            )


def _run(fn: Callable[..., dict[str, Any]], *args: Any) -> Answer:
    """``fn``'s answer as the structured content and, once, as compact JSON text (the SDK's own
    text copy is indented: half as many tokens again for the agent to read)."""
    try:
        _refuse_nul(fn, args)
        answer = fn(*args, viewer=current_viewer())
    except tools.ToolInputError as exc:
        raise ToolError(str(exc)) from None
    finally:
        connection.close()
    return CallToolResult(
        content=[TextContent(type="text", text=compact_json(answer))], structured_content=answer
    )


def search_code(
    query: Annotated[
        str,
        Field(
            description='Words, an identifier, "exact text" or /regex/ (combine those with OR, '
            'NOT or -, and parentheses: ("a" OR "b") -"c"), with filters such as repo:NAME '
            "lang:python file:src/**/*.py -file:*_test.go case:yes (GitHub's language:, path:, "
            "symbol:, content: work too)."
        ),
    ],
    k: Annotated[int | None, Field(description="Hits to return, 1..30 (default 8).")] = None,
    rerank: Annotated[
        bool | None, Field(description="Re-rank with the chat model (default false; slower).")
    ] = None,
    expand: Annotated[
        bool | None,
        Field(description="Add definitions the hits call and a few callers (default false)."),
    ] = None,
    include_tests: Annotated[
        bool | None,
        Field(description="Include test code (default: only if the query is about tests)."),
    ] = None,
    include_docs: Annotated[
        bool | None,
        Field(description="Include docs/config (default: only if the query is about docs)."),
    ] = None,
    repo: Annotated[
        str | None, Field(description="Only this repository (name or id; default: all).")
    ] = None,
    mode: Annotated[
        str | None,
        Field(
            description="auto (default: plain text is semantic+full-text, quotes exact, "
            "/.../ regex), semantic, exact (the whole text literally) or regex."
        ),
    ] = None,
    cursor: Annotated[
        str | None, Field(description="next_cursor of an earlier answer: the next page.")
    ] = None,
    max_tokens: Annotated[int | None, Field(description=BUDGET)] = None,
    branch: Annotated[
        str | None,
        Field(
            description="Search this indexed branch (a name or glob like release/*; * for "
            "every branch; default: each repository's default branch). Every mode."
        ),
    ] = None,
) -> Answer:
    """Search the indexed code. Hybrid (plain text): hits with location (path:start-end),
    symbol, snippet, best first, 'semantic' when similar but without the words. Exact/regex:
    files in path order with matching lines and true totals. type:file: file names. Every
    answer fits max_tokens; truncated + next_cursor say there is more and fetch it."""
    return _run(
        tools.search_code,
        query,
        k,
        rerank,
        expand,
        include_tests,
        include_docs,
        repo,
        mode,
        cursor,
        max_tokens,
        branch,
    )


def list_repositories() -> Answer:
    """List the indexed repositories: id, name, URL, status, indexed commit, file/chunk counts."""
    return _run(tools.list_repositories)


def repository_status(
    repo: Annotated[str, Field(description="Repository name or id (see list_repositories).")],
) -> Answer:
    """How fresh a repository's index is: indexed commit and time, the remote's tip at the last
    check, behind (true/false/null = unknown), poll errors, the job in progress, and the same for
    each other indexed branch (branches)."""
    return _run(tools.repository_status, repo)


def get_file(
    repo: Annotated[str, Field(description="Repository name or id (see list_repositories).")],
    path: Annotated[str, Field(description="File path as search_code returns it.")],
    start_line: Annotated[int | None, Field(description="First line, 1-based (default 1).")] = None,
    end_line: Annotated[
        int | None, Field(description="Last line (default: start_line + 399; 400 lines at most).")
    ] = None,
    max_tokens: Annotated[int | None, Field(description=BUDGET)] = None,
) -> Answer:
    """Read lines of an indexed file at the indexed commit (at most 400 lines per call, and
    what fits in max_tokens); truncated + next_start_line say where to go on."""
    return _run(tools.get_file, repo, path, start_line, end_line, max_tokens)


def find_symbol(
    name: Annotated[str, Field(description="A definition's name, or part of one: 'send'.")],
    repo: Annotated[
        str | None, Field(description="Only this repository (name or id; default: all).")
    ] = None,
    lang: Annotated[str | None, Field(description="Only this language, e.g. python.")] = None,
    kind: Annotated[
        str | None, Field(description="Only this kind: function, method, class, ...")
    ] = None,
    limit: Annotated[int | None, Field(description="Definitions to return, 1..50 (20).")] = None,
    branch: Annotated[
        str | None,
        Field(
            description="An indexed branch, a glob ('release/*') or '*' (default: each default)."
        ),
    ] = None,
) -> Answer:
    """Find definitions by name (what tree-sitter indexed): exact names first, then prefixes,
    substrings and similar names. Each has location (path:start-end), symbol, kind, match (and
    branch, when one was asked for)."""
    return _run(navigation_tools.find_symbol, name, repo, lang, kind, limit, branch)


def find_references(
    name: Annotated[str, Field(description="An identifier: 'send', 'Client'.")],
    repo: Annotated[
        str | None, Field(description="Only this repository (name or id; default: all).")
    ] = None,
    limit: Annotated[int | None, Field(description="References to return, 1..200 (50).")] = None,
) -> Answer:
    """Find where an identifier is used: call sites indexing recorded plus whole-word,
    case-sensitive matches, as 'repo:path:line: text' (' (call)' for a recorded call)."""
    return _run(navigation_tools.find_references, name, repo, limit)


def list_files(
    repo: Annotated[str, Field(description="Repository name or id (see list_repositories).")],
    path: Annotated[str | None, Field(description="Only under this directory: 'src/app'.")] = None,
    glob: Annotated[
        str | None, Field(description="Only paths matching this glob: '*.py', 'src/**/test_*'.")
    ] = None,
) -> Answer:
    """List the indexed files of a repository at the indexed commit (at most 500 paths; total
    and truncated say how many matched)."""
    return _run(navigation_tools.list_files, repo, path, glob)


def locate_issue(
    issue: Annotated[
        str,
        Field(
            description="The issue or stack trace as written (up to 20,000 characters): title, "
            "description, tracebacks, paths, `names`, error messages, code blocks."
        ),
    ],
    repo: Annotated[
        str | None, Field(description="Only this repository (name or id; default: all).")
    ] = None,
    branch: Annotated[
        str | None, Field(description="An indexed branch (default: each default branch).")
    ] = None,
    limit: Annotated[int | None, Field(description="Files to return, 1..30 (10).")] = None,
    include_tests: Annotated[
        bool | None, Field(description="Rank test files too (default false).")
    ] = None,
    max_tokens: Annotated[int | None, Field(description=BUDGET)] = None,
) -> Answer:
    """Which files (and functions) an issue most likely needs changed: paths, stack frames,
    names and error text from the issue are looked up exactly, its description by meaning; each
    file comes with the functions that made it rank and why (why)."""
    return _run(locate_tool.locate_issue, issue, repo, branch, limit, include_tests, max_tokens)


def refresh_repository(
    repo: Annotated[str, Field(description="Repository name or id (see list_repositories).")],
    branch: Annotated[
        str | None,
        Field(description="One of its indexed branches (default: the default branch)."),
    ] = None,
) -> Answer:
    """Queue a re-index of a repository's branch (incremental; joined with a run already going).
    Needs a token with the write role; the answer names the queued job (see repository_status)."""
    return _run(refresh.refresh_repository, repo, branch)


def _version() -> str:
    """The installed reposearch's version, which ``initialize`` reports to the agent."""
    try:
        return importlib.metadata.version("reposearch")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree never installed
        return ""


def build_server() -> MCPServer:
    """A new MCP server: the read-only tools and refresh_repository."""
    server: MCPServer = MCPServer(
        name="reposearch", version=_version(), instructions=INSTRUCTIONS, log_level="WARNING"
    )
    for fn in (
        search_code,
        list_repositories,
        repository_status,
        get_file,
        find_symbol,
        find_references,
        list_files,
        locate_issue,
    ):
        server.add_tool(fn, annotations=READ_ONLY, structured_output=True)
    server.add_tool(refresh_repository, annotations=QUEUES_WORK, structured_output=True)
    return server
