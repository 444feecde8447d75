"""MCP servers and their tools, on the official SDK (``mcp`` on PyPI).

Nothing here imports the SDK (half a second) until an enabled server starts:
``servers.McpServers`` does it then, off the event loop. The modules that use the
SDK are ``connection``, ``stdio``, ``http`` and ``results``.
"""
