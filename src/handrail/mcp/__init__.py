"""MCP server and client (placeholder: being written)."""
