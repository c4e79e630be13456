"""handrail on a Ray cluster: many sessions per host actor, each over its own workspace.

```python
from handrail.ray import GitWorkspace, SessionPool

async with SessionPool(max_sessions_per_host=256) as pool:
    rt = await pool.open(GitWorkspace("/data/repo.git"), mode="accept_edits")
    r = await rt.call("read_file", {"file_path": "README.md"})   # a ToolResult, always
    await rt.aclose()
```

Needs the `ray` extra (`pip install "handrail[ray]"`). Ray places the hosts, supervises them
and reports their deaths; the calls travel over an authenticated socket each host serves. A
dead host is `SESSION_LOST`, a host that cannot take a call `BACKEND_UNAVAILABLE`: results,
never exceptions. A session's checkpoints are kept in its host (`RemoteRuntime.checkpoints`,
`restore_plan`, `restore`). The README's "Many sessions on a Ray cluster" shows the whole API.
"""

from __future__ import annotations

from ._client import RemoteRuntime
from ._git import GitWorkspace
from ._pool import SessionPool
from ._stream import RemoteBatch, RemoteStream
from ._workspace import (
    DirWorkspace,
    EmptyWorkspace,
    PathWorkspace,
    TarWorkspace,
    Workspace,
    WorkspaceError,
)

__all__ = [
    "DirWorkspace",
    "EmptyWorkspace",
    "GitWorkspace",
    "PathWorkspace",
    "RemoteBatch",
    "RemoteRuntime",
    "RemoteStream",
    "SessionPool",
    "TarWorkspace",
    "Workspace",
    "WorkspaceError",
]
