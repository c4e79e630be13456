"""Processes that die with handrail: a parent-death signal and a small supervisor shell.

A process handrail starts asks the kernel, between fork and exec, for a signal when its parent
dies (`prctl(PR_SET_PDEATHSIG)`), then checks that the parent is still the one that forked it:
if handrail died before the request was made, nothing would ever be sent, so the child exits
on its own. The kernel sends the signal when the *thread* that forked the child exits, not the
whole process: every spawn happens on the event loop's thread (asyncio calls `Popen` there),
which outlives whatever it started.

A shell command runs under a supervisor, a shell that starts the command in the background,
waits for it and exits with its status. It is the process that gets the signal, and it traps
it, so it can end everything the command started:
* with a PID namespace, the command's first process (PID 1 of the namespace, a subshell of the
  supervisor; the command runs as its child, so it is never PID 1 itself) is SIGKILLed and the
  kernel ends every other member, whatever session or process group it moved to. That PID 1
  also asks (through setpriv(1), where there is one) for SIGKILL when the supervisor dies, so a
  supervisor killed outright, before its trap can run, still takes the namespace with it;
* without one, the supervisor is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so whatever the
  command orphans (double forks, daemons) is reparented to it instead of to init: it SIGKILLs
  every process below it, again and again until none is left. A process group or session would
  miss `setsid` children; being their ancestor does not.

SIGTERM, SIGINT, SIGHUP and SIGQUIT are ignored by the supervisor: when handrail stops a
command they are meant for the command, which gets its grace period. The supervisor is bash
where there is one, started in POSIX mode so that it reads no `BASH_ENV` (a startup file that
forked would take the namespace's PID 1). A POSIX sh must make a background job ignore SIGINT and
SIGQUIT for good; bash lets the job restore them, so the command sees default signals.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import subprocess
from collections.abc import Callable

from ._programs import system_which

__all__ = [
    "DEATH_SIGNAL",
    "ParentDeath",
    "die_with_parent",
    "init_argv",
    "supervised_argv",
    "supported",
]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

DEATH_SIGNAL: int = signal.SIGRTMIN + 4 if hasattr(signal, "SIGRTMIN") else signal.SIGUSR2
"""What a supervisor gets when handrail dies: a real-time signal nothing else sends it (a
command signalling its own process group reaches the supervisor too)."""

# $1 the death signal, $2 "1" with a PID namespace, $3 the command's shell, $4 the command,
# $5 setpriv(1) or "" (PID 1 of the namespace asks for SIGKILL when the supervisor dies: a
# supervisor killed outright, with no chance to run its trap, still takes the namespace along;
# Ray, for one, SIGKILLs a dying worker's children), $6 $7 the supervisor's own shell and its
# POSIX flag, which PID 1 then runs (in POSIX mode it reads no BASH_ENV: that is the command's).
# Bash leaves POSIX mode once started: like the sh before it, PID 1 then reports a command
# killed by a signal ("Terminated" on stderr), which the model sees at a time limit.
# With a namespace the background subshell is PID 1 (the supervisor's first child) and runs
# the command as its child; `exit $?` after it keeps the shell from exec'ing the command in
# its place. The sweep reads every /proc/N/stat ("pid (comm) state ppid ..."; the name may hold
# spaces and parentheses, so fields are taken after the last ") ") and SIGKILLs each live
# process whose parent is the supervisor or one it killed, until a whole pass finds none: any
# process left below the subreaper would have an ancestor whose parent is on the list.
_SUPERVISOR = r"""${BASH_VERSION:+set +o posix}
sig=$1 ns=$2 sh=$3 cmd=$4 pd=$5 ss=$6 sp=$7
sweep() {
  exec 2>/dev/null
  tree=" $$ " passes=0 grew=1
  while [ $grew = 1 ] && [ $passes -lt 100 ]; do
    grew=0 passes=$((passes + 1))
    for f in /proc/[0-9]*/stat; do
      read -r line < "$f" || continue
      pid=${line%% *}
      case $tree in *" $pid "*) continue ;; esac
      rest=${line##*') '}
      case $rest in [ZXx]' '*) continue ;; esac
      rest=${rest#* }
      case $tree in *" ${rest%% *} "*) ;; *) continue ;; esac
      tree="$tree$pid " grew=1
      kill -KILL "$pid"
    done
  done
}
trap '' TERM INT HUP QUIT
if [ "$ns" = 1 ]; then
  trap 'kill -KILL $! 2>/dev/null; exit 137' "$sig"
  if [ -n "$pd" ]; then
    { trap - TERM INT HUP QUIT "$sig"
      exec "$pd" --pdeathsig KILL -- "$ss" $sp -c \
        '${BASH_VERSION:+set +o posix}; "$0" -c "$1"; exit $?' "$sh" "$cmd"; } &
  else
    { trap - TERM INT HUP QUIT "$sig"; "$sh" -c "$cmd"; exit $?; } &
  fi
else
  trap 'sweep; exit 137' "$sig"
  { trap - TERM INT HUP QUIT "$sig"; exec "$sh" -c "$cmd"; } &
fi
wait $!
exit $?
"""

try:
    _prctl: Callable[..., int] | None = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None


class ParentDeath:
    """A `preexec_fn`: signal the child when its parent dies; exit now if it already has.

    Build it in the parent (it binds everything the child needs, so the child allocates
    nothing) and call it last between fork and exec: a later change of credentials would
    clear the setting.

    Args:
        sig: The signal to send the child when the thread that forked it exits.
        subreaper: Also make the child a child subreaper (orphans below it become its children).
    """

    def __init__(self, sig: int, *, subreaper: bool = False) -> None:
        assert _prctl is not None
        self.prctl = _prctl
        self.sig = sig
        self.subreaper = subreaper
        self.parent = os.getpid()
        self.getppid = os.getppid
        self.exit = os._exit

    def __call__(self) -> None:
        if self.subreaper:
            self.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        self.prctl(_PR_SET_PDEATHSIG, self.sig, 0, 0, 0)
        if self.getppid() != self.parent:
            self.exit(1)  # the parent died before the request: no signal will ever come


def die_with_parent(sig: int = signal.SIGKILL) -> ParentDeath | None:
    """A `preexec_fn` that delivers `sig` to the child when handrail dies (None: not Linux)."""
    return ParentDeath(sig) if _prctl is not None else None


@functools.cache
def _supervisor_shell() -> tuple[str, ...]:
    bash = system_which("bash")
    if bash is not None:
        return (bash, "--posix")
    return ("/bin/sh" if os.path.exists("/bin/sh") else system_which("sh") or "sh",)


def supervised_argv(shell: str, command: str, *, pid_namespace: bool) -> list[str]:
    """The argv that runs `shell -c command` under a supervisor (see the module docstring).

    Start it with `ParentDeath(DEATH_SIGNAL, subreaper=not pid_namespace)` as the last step of
    its `preexec_fn`, and, for `pid_namespace`, after `unshare(CLONE_NEWPID)`.
    """
    return [
        *_supervisor_shell(),
        "-c",
        _SUPERVISOR,
        "handrail-supervisor",
        str(DEATH_SIGNAL),
        "1" if pid_namespace else "0",
        shell,
        command,
        (_setpriv() or "") if pid_namespace else "",
        _supervisor_shell()[0],
        " ".join(_supervisor_shell()[1:]),
    ]


# PID 1 of a namespace: it runs the command as its child (PID 1 ignores every signal it has no
# handler for, so the command must not be PID 1 itself) and exits with its status; `exit $?`
# after it keeps the shell from exec'ing the command in its place. Started in POSIX mode, it
# reads no BASH_ENV (that is the command's), then leaves it.
_INIT = '${BASH_VERSION:+set +o posix}; "$0" -c "$1"; exit $?'


def init_argv(shell: str, command: str) -> list[str]:
    """The argv of a PID namespace's init that runs `shell -c command` (see `_child.py`)."""
    return [*_supervisor_shell(), "-c", _INIT, shell, command]


@functools.cache
def _setpriv() -> str | None:
    # --pdeathsig came with util-linux 2.33 (2018): an older setpriv would refuse the option
    # and the command would never run, so it is used only when its help lists the option.
    found = system_which("setpriv")
    if found is None:
        return None
    try:
        done = subprocess.run(
            [found, "--help"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found if "--pdeathsig" in done.stdout + done.stderr else None


def supported() -> bool:
    """The kernel can signal a child when its parent dies (Linux)."""
    return _prctl is not None
