"""The MCP server for coding agents: search, read and navigate the indexed code, and queue a
re-index (``refresh_repository``, the one tool that is not read-only; it needs the write role).

Built with the official ``mcp`` SDK (``MCPServer``); served over stdio by ``manage.py mcp`` and
over streamable HTTP at ``/mcp`` by the web server (``reposearch.asgi``).
"""
