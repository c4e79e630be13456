"""Going back to where one of the user's prompts began: the files, the conversation, or both.

Each prompt is marked when it begins (`PromptMark`: the conversation before it, and the last
checkpoint before it). The files as that prompt found them are the state of the first
checkpoint taken after the mark: the runtime takes one before every call that can change files,
sub-agents' calls included (a writing child records into its parent's session).
Rewinding the conversation puts the messages back and drops the later prompts; the transcript
records it (`rewind`), so a resumed session carries on from the rewound conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._contract import Approver
from ..errors import ConfigurationError
from ..sandbox import Checkpoint, Restored
from ._conversation import message_to_json
from ._sessions import PromptMark

if TYPE_CHECKING:
    from ._loop import Agent

__all__ = ["Rewound", "TurnCheckpoint", "rewind", "turn_checkpoints"]


@dataclass(frozen=True, slots=True)
class TurnCheckpoint:
    """One of the user's prompts, and what going back to it would undo."""

    turn: int
    """1 for the conversation's first prompt (`Agent.rewind(turn)` takes this number)."""
    prompt: str
    files: tuple[str, ...]
    """The paths the session changed from this prompt on, until the next one (relative)."""
    checkpoint: int | None
    """The checkpoint holding the files as the prompt found them; None when the session has
    changed no file since it began (or keeps no checkpoints)."""


@dataclass(frozen=True, slots=True)
class Rewound:
    """What `Agent.rewind` did."""

    turn: int
    prompt: str
    """The prompt gone back to (a front end offers it for editing)."""
    restored: Restored | None = None
    """The files' restore (None: code not asked for, or nothing to put back)."""
    conversation: bool = False
    """True when the conversation went back to before the prompt."""
    refused: str | None = None
    """Why nothing was done (files changed outside the session, not confirmed)."""

    @property
    def ok(self) -> bool:
        return self.refused is None


def _checkpoints(agent: Agent) -> list[Checkpoint]:
    runtime = agent.runtime
    return runtime.checkpoints() if runtime.keeps_checkpoints else []


def last_checkpoint(agent: Agent) -> int:
    """The id of the session's latest checkpoint (0: none yet)."""
    runtime = agent.runtime
    return runtime.session_checkpoints().last_id if runtime.keeps_checkpoints else 0


def turn_checkpoints(agent: Agent) -> list[TurnCheckpoint]:
    """The conversation's prompts, oldest first, with the files each changed."""
    points = _checkpoints(agent)
    out: list[TurnCheckpoint] = []
    marks = agent.prompts
    for i, mark in enumerate(marks):
        until = marks[i + 1].after if i + 1 < len(marks) else None
        own = [c for c in points if c.id > mark.after and (until is None or c.id <= until)]
        files: dict[str, None] = {}
        for c in own:
            outside = set(c.outside)
            files.update((p, None) for p in c.changed if p not in outside)
        later = [c for c in points if c.id > mark.after]
        out.append(
            TurnCheckpoint(
                turn=mark.turn,
                prompt=mark.prompt,
                files=tuple(files),
                checkpoint=later[0].id if later else None,
            )
        )
    return out


async def rewind(
    agent: Agent,
    turn: int,
    *,
    code: bool,
    conversation: bool,
    approver: Approver | None,
) -> Rewound:
    """Go back to where prompt `turn` began (see `Agent.rewind`)."""
    marks = agent.prompts
    if not 1 <= turn <= len(marks):
        raise ConfigurationError(f"no prompt {turn} in this conversation (it has {len(marks)})")
    if code and not agent.runtime.keeps_checkpoints:
        raise ConfigurationError(
            "this agent's runtime keeps no checkpoints, so its files cannot go back: "
            "make it with Runtime(checkpoints=True)"
        )
    mark = marks[turn - 1]
    restored: Restored | None = None
    if code:
        target = next((c.id for c in _checkpoints(agent) if c.id > mark.after), None)
        if target is not None:
            restored = await agent.runtime.restore(
                target, approver=approver or agent.approver or agent.runtime.approver
            )
            if not restored.ok:
                return Rewound(
                    turn=turn, prompt=mark.prompt, restored=restored, refused=restored.refused
                )
        # What the model read may have changed: it reads a file again before changing it.
        agent.runtime.session.files.clear()
    if conversation:
        _rewind_conversation(agent, mark)
    return Rewound(turn=turn, prompt=mark.prompt, restored=restored, conversation=conversation)


def _rewind_conversation(agent: Agent, mark: PromptMark) -> None:
    agent.messages = list(mark.messages)
    del agent.prompts[mark.turn - 1 :]
    agent.runtime.session.files.clear()
    agent.repeats.clear()
    agent.meter.forget()
    agent.recorder.write(
        {
            "type": "rewind",
            "turn": mark.turn,
            "messages": [message_to_json(m) for m in agent.messages],
        }
    )
