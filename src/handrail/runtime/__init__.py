"""The runtime: the call pipeline, the batch scheduler and the streaming executor.

Invariants: every call passes every stage (resolve, parse, validate, check, hooks, permit,
run, shape) in that order; every call gets exactly one `ToolResult`; results come back in
request order; cancellation from outside always propagates; nothing else raises.
"""

from __future__ import annotations

from ._executor import Batch as Batch
from ._executor import StreamingExecutor as StreamingExecutor
from ._runtime import ApproverFunc as ApproverFunc
from ._runtime import Runtime as Runtime

__all__ = ["ApproverFunc", "Batch", "Runtime", "StreamingExecutor"]
