"""MCP both ways: `serve` a registry to MCP clients, and import MCP servers' tools.

The client answers what servers ask of it (elicitation, sampling, roots), runs task-only
tools as tasks, signs in to remote servers with OAuth (`handrail mcp login NAME`), and lists
a server's tools from a cache so the server starts on the first call of one of them.

Nothing here imports the MCP SDK until a server starts or a client connects (the SDK costs
about a second to import). Invariants: every served call goes through the whole runtime
pipeline (one handrail `Session` per MCP session); an imported tool is validated against its
server's own JSON Schema and its failures are `ToolResult`s like any other tool's.
"""

from ._client import DEFAULT_TOKEN_BUDGET as DEFAULT_TOKEN_BUDGET
from ._client import McpTools as McpTools
from ._client import load_mcp_tools as load_mcp_tools
from ._client_tool import McpTool as McpTool
from ._config import McpServerConfig as McpServerConfig
from ._config import load_mcp_config as load_mcp_config
from ._config_oauth import McpIdentityProvider as McpIdentityProvider
from ._config_oauth import McpOAuthConfig as McpOAuthConfig
from ._server import serve as serve

__all__ = [
    "DEFAULT_TOKEN_BUDGET",
    "McpIdentityProvider",
    "McpOAuthConfig",
    "McpServerConfig",
    "McpTool",
    "McpTools",
    "load_mcp_config",
    "load_mcp_tools",
    "serve",
]
