"""The runtime: the call pipeline, the batch scheduler and the streaming executor.

Invariants: every call passes every stage (resolve, parse, validate, check, hooks, permit,
run, shape) in that order; every call gets exactly one `ToolResult`; results come back in
request order; a session's calls that are not concurrency-safe never overlap with another of
its calls, however the host starts them (`_gate`); cancellation from outside always
propagates; nothing else raises. With checkpoints on, every call that can change files is
recorded (`_checkpointing`): a change no record covers is one made outside the session.

Structure, imports flowing one way (each module imports only those listed before it):
`_messages`, `_threads`, `_gate` (the per-session reader/writer gate), `_shaping` (leaves)
→ `_calls` (the values passed between stages) → `_results` (refusal results, shaping) →
`_result_content` (content parts, structured content), `_hooks` (running hooks),
`_checkpointing` (a checkpoint around each call that can change files) → `_runner`
(stages 7-8, running calls, cancellation) → `_pipeline` (`Pipeline`: stages 1-6 on top of the
runner; an ask goes to the call's approver, else the runtime's, else waits as pending) →
`_executor` (`Batch`, `StreamingExecutor`: drive a pipeline) → `_runtime` (`Runtime`:
settings, policy and registry set-up; owns a pipeline, makes executors).
"""

from __future__ import annotations

from ._executor import Batch as Batch
from ._executor import StreamingExecutor as StreamingExecutor
from ._runtime import Runtime as Runtime

__all__ = ["Batch", "Runtime", "StreamingExecutor"]
