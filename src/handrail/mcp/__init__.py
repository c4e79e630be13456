"""MCP server and client (placeholder: being written)."""

from ._client import DEFAULT_TOKEN_BUDGET as DEFAULT_TOKEN_BUDGET
from ._client import McpTools as McpTools
from ._client import load_mcp_tools as load_mcp_tools
from ._client_tool import McpTool as McpTool
from ._config import McpServerConfig as McpServerConfig
from ._config import load_mcp_config as load_mcp_config
from ._server import serve as serve
