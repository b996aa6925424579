"""The read-only MCP server for coding agents: ``search_code``, ``list_repositories``, ``get_file``.

Built with the official ``mcp`` SDK (``MCPServer``); served over stdio by ``manage.py mcp`` and
over streamable HTTP at ``/mcp`` by the web server (``reposearch.asgi``).
"""
