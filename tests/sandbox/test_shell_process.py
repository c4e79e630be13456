"""ShellProcess and Confinement: real processes, real namespaces and Landlock where available."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from handrail.sandbox import SandboxSupport, ShellProcess, read_log, sandbox_support
from handrail.sandbox._capture import OutputCapture
from handrail.sandbox._os_confinement import Confinement, namespace_members
from handrail.sandbox._parent_death import DEATH_SIGNAL, ParentDeath, supported

SUPPORT = sandbox_support()
needs_sandbox = pytest.mark.skipif(
    not SUPPORT.available, reason=f"no OS sandbox on this machine: {SUPPORT.reason}"
)
needs_namespaces = pytest.mark.skipif(
    not SUPPORT.namespaces, reason="this machine does not allow PID/mount/network namespaces"
)


async def start(
    command: str, cwd: Path, conf: Confinement | None = None
) -> tuple[ShellProcess, OutputCapture]:
    """A running command with this process's environment, and the capture of its output."""
    cap = OutputCapture(None)
    proc = await ShellProcess.start(
        command, cwd=cwd, env=dict(os.environ), capture=cap, confinement=conf
    )
    return proc, cap


async def run(
    command: str,
    cwd: Path,
    conf: Confinement | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[int | None, str]:
    cap = OutputCapture(None)
    proc = await ShellProcess.start(
        command, cwd=cwd, env=dict(env or os.environ), capture=cap, confinement=conf
    )
    await proc.wait(30)
    await proc.finish()
    cap.close()
    return proc.returncode, cap.render()


def test_support_is_probed_once_and_labelled() -> None:
    s = sandbox_support()
    assert s is sandbox_support()
    assert s.mechanism in {"landlock+namespaces", "landlock", "none"}
    assert s.available == (s.landlock > 0)
    if not s.available:
        assert s.reason


def test_confinement_refuses_to_pretend_without_landlock(tmp_path: Path) -> None:
    none = SandboxSupport(landlock=0, namespaces=False, user_namespace=False, reason="none here")
    with pytest.raises(OSError, match="none here"):
        Confinement(write_roots=[tmp_path], temp_dir=tmp_path, support=none)


@needs_namespaces
async def test_process_control_only_still_gets_a_pid_namespace(tmp_path: Path) -> None:
    with Confinement(filesystem=False) as conf:
        assert conf.label == "none" and conf.pid_namespace
        code, out = await run(
            "echo $$; echo x > /tmp/../" + str(tmp_path / "f.txt"), tmp_path, conf
        )
    assert code == 0
    # PID 1 is a small init shell; the command runs under it, in the same namespace.
    assert out.splitlines()[0] == "2"
    assert (tmp_path / "f.txt").exists()  # no write confinement asked for


@needs_sandbox
async def test_landlock_confines_every_descendant(tmp_path: Path) -> None:
    root, other = tmp_path / "root", tmp_path / "other"
    root.mkdir()
    other.mkdir()
    with Confinement(write_roots=[root], temp_dir=root) as conf:
        # A grandchild through a second shell and python: still confined.
        code, out = await run(
            f'bash -c \'python3 -c "open(\\"{other}/x\\", \\"w\\")"\' 2>&1; echo ok > in.txt',
            root,
            conf,
        )
    assert code == 0, out
    # EROFS: outside the write roots every mount is read-only (which also stops chmod/touch).
    assert "PermissionError" in out or "Read-only file system" in out
    assert not (other / "x").exists() and (root / "in.txt").read_text() == "ok\n"


@needs_sandbox
async def test_devices_stay_writable(tmp_path: Path) -> None:
    with Confinement(write_roots=[tmp_path], temp_dir=tmp_path) as conf:
        code, out = await run("echo gone > /dev/null && echo fine", tmp_path, conf)
    assert code == 0 and out == "fine"


@needs_namespaces
async def test_namespace_members_lists_the_tree(tmp_path: Path) -> None:
    cap = OutputCapture(None)
    with Confinement(filesystem=False) as conf:
        proc = await ShellProcess.start(
            "sleep 30 & sleep 30 & wait",
            cwd=tmp_path,
            env=dict(os.environ),
            capture=cap,
            confinement=conf,
        )
    members: list[int] = []
    for _ in range(200):  # the sleeps appear within milliseconds; bounded
        members = namespace_members(proc.pid)
        if len(members) >= 3:
            break
        await __import__("asyncio").sleep(0.01)
    assert len(members) >= 3  # the init shell and two sleeps
    await proc.stop("stop", grace=0.5)
    assert namespace_members(proc.pid) == []
    assert proc.killed_by == "stop"


async def test_log_file_receives_everything_and_reads_from_offset(tmp_path: Path) -> None:
    cap = OutputCapture(None)
    log = tmp_path / "job.log"
    proc = await ShellProcess.start(
        "echo one; echo two >&2; echo three",
        cwd=tmp_path,
        env=dict(os.environ),
        capture=cap,
        log_path=log,
    )
    await proc.wait(30)
    await proc.finish()
    data, size = read_log(log, 0, 1000)
    assert sorted(data.decode().split()) == ["one", "three", "two"]
    assert size == len(data) == proc.log_bytes
    rest, _ = read_log(log, 4, 1000)
    assert rest == data[4:]
    assert read_log(tmp_path / "missing.log", 0, 10) == (b"", 0)


# -- the supervisor: the tree dies with handrail, the command's own signals and status stay ----

needs_linux = pytest.mark.skipif(not supported(), reason="parent-death signals are Linux only")


def marked(text: str) -> list[int]:
    """Live processes with `text` in their argv (zombies excluded)."""
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text in argv and state != b"Z":
            out.append(int(entry))
    return out


def confinement(kind: str, root: Path | None = None) -> Confinement | None:
    if kind == "fresh_proc":
        # The sandbox as run_shell uses it: PID 1 forked by the setup, its own /proc, and a
        # supervisor that is the setup's own process (`_child.py`), not a shell.
        if not SUPPORT.fresh_proc:
            pytest.skip("this machine cannot give a command a /proc of its own")
        where = root or Path(tempfile.mkdtemp(prefix="handrail-test-"))
        return Confinement(write_roots=[where], temp_dir=where)
    if kind == "namespace":
        if not SUPPORT.namespaces:
            pytest.skip("this machine does not allow PID/mount/network namespaces")
        return Confinement(filesystem=False)
    return None


@needs_linux
@pytest.mark.parametrize("kind", ["fresh_proc", "namespace", "no_namespace"])
async def test_the_death_signal_ends_everything_the_command_started(
    kind: str, tmp_path: Path
) -> None:
    # What the kernel sends the supervisor when handrail dies: every process goes, also those
    # that left the process group and session and closed the command's pipes.
    sleep = f"1000.{uuid.uuid4().int % 10**9:09d}"
    ready = tmp_path / "ready"
    conf = confinement(kind, tmp_path)
    proc, cap = await start(
        f"sleep {sleep} | sleep {sleep} & setsid sleep {sleep} & ( sleep {sleep} & ); "
        f"( setsid sh -c 'sleep {sleep} & sleep {sleep}' </dev/null >/dev/null 2>&1 & ); "
        f"echo ready > {ready}; sleep {sleep}",
        tmp_path,
        conf,
    )
    try:
        for _ in range(500):  # everything starts within milliseconds; bounded at ~5 s
            if ready.exists() and len(marked(sleep)) >= 8:
                break
            await asyncio.sleep(0.01)
        assert len(marked(sleep)) >= 8
        # With a /proc of its own the supervisor asked for SIGKILL itself (PID 1 gets one too
        # when the supervisor dies); otherwise it traps DEATH_SIGNAL and ends the tree.
        fresh = kind == "fresh_proc"
        os.kill(proc.pid, signal.SIGKILL if fresh else DEATH_SIGNAL)
        for _ in range(100):  # gone within 1 s
            if not marked(sleep):
                break
            await asyncio.sleep(0.01)
        assert marked(sleep) == []
        assert await proc.wait(5)
        assert proc.returncode == (-signal.SIGKILL if fresh else 137)
    finally:
        await proc.aclose()
        cap.close()
        if conf is not None:
            conf.close()
        for pid in marked(sleep):
            os.kill(pid, signal.SIGKILL)


@needs_linux
@pytest.mark.parametrize("kind", ["fresh_proc", "namespace", "no_namespace"])
async def test_a_stopped_command_gets_its_grace_and_its_status_passes_through(
    kind: str, tmp_path: Path
) -> None:
    # SIGTERM is for the command: the supervisor (and the namespace's init) ignore it, so the
    # command's trap runs in full and its exit status is the result.
    conf = confinement(kind, tmp_path)
    ready = tmp_path / "ready"
    proc, cap = await start(
        f"trap 'sleep 0.2; echo cleaned > done; exit 3' TERM; echo > {ready}; "
        "while :; do sleep 0.05; done",
        tmp_path,
        conf,
    )
    try:
        for _ in range(500):  # bounded at ~5 s
            if ready.exists():
                break
            await asyncio.sleep(0.01)
        await proc.stop("stop", grace=10)
        assert (tmp_path / "done").read_text() == "cleaned\n"
        assert proc.returncode == 3
    finally:
        await proc.aclose()
        cap.close()
        if conf is not None:
            conf.close()


@needs_linux
@pytest.mark.parametrize("kind", ["fresh_proc", "namespace", "no_namespace"])
async def test_a_command_stopped_as_it_starts_still_gets_sigterm(kind: str, tmp_path: Path) -> None:
    # A SIGTERM sent while the supervisor's first child is still setting up is dropped (the
    # namespace's PID 1 drops unhandled signals; a fresh child still ignores SIGTERM as the
    # supervisor does): the command must get one anyway, not sit out the grace and be
    # SIGKILLed. Ended by SIGTERM (143; -15: the supervisor itself, before its first line) or
    # by its trap (3), never killed (-9, 137).
    conf = confinement(kind, tmp_path)
    codes: list[int | None] = []
    try:
        # Stopped at once or a little later: the window moves with the machine's load.
        for pause in [0.0, 0.0, 0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.007, 0.01] * 2:
            proc, cap = await start(
                "trap 'exit 3' TERM; while :; do sleep 0.05; done",
                tmp_path,
                conf,
            )
            try:
                await asyncio.sleep(pause)
                await proc.stop("stop", grace=5)
                codes.append(proc.returncode)
            finally:
                await proc.aclose()
                cap.close()
    finally:
        if conf is not None:
            conf.close()
    assert set(codes) <= {3, 143, -15}, codes


@needs_linux
@pytest.mark.parametrize("kind", ["fresh_proc", "namespace", "no_namespace"])
async def test_a_stopped_command_leaves_nothing_running(kind: str, tmp_path: Path) -> None:
    # "Stopped" means gone: once stop() returns, no process of the command is left running,
    # also one that ignores SIGTERM, holds none of the command's pipes and outlives the
    # command and its supervisor (the SIGKILL at the end of the grace must still reach it).
    sleep = f"1000.{uuid.uuid4().int % 10**9:09d}"
    conf = confinement(kind, tmp_path)
    try:
        for _ in range(5):
            proc, cap = await start(
                f"( trap '' TERM; exec sleep {sleep} ) >/dev/null 2>&1 & "
                f"sleep {sleep} >/dev/null 2>&1 & wait",
                tmp_path,
                conf,
            )
            try:
                for _ in range(500):  # bounded at ~5 s
                    if len(marked(sleep)) >= 2:
                        break
                    await asyncio.sleep(0.01)
                await proc.stop("stop", grace=0.05)
                assert marked(sleep) == []
            finally:
                await proc.aclose()
                cap.close()
                for pid in marked(sleep):
                    os.kill(pid, signal.SIGKILL)
    finally:
        if conf is not None:
            conf.close()


@needs_linux
@pytest.mark.parametrize("kind", ["fresh_proc", "namespace", "no_namespace"])
async def test_the_command_keeps_default_signals_and_bash_env_runs_once(
    kind: str, tmp_path: Path
) -> None:
    # A POSIX sh makes a background job ignore SIGINT and SIGQUIT; bash's supervisor restores
    # them. BASH_ENV is the command's (once), never the supervisor's: a fork there would take
    # the namespace's PID 1 and leave the command none.
    bash_env = tmp_path / "env.sh"
    bash_env.write_text("/bin/true; echo from-bash-env\n")
    conf = confinement(kind, tmp_path)
    try:
        code, out = await run(
            "grep -E '^SigIgn' /proc/self/status; exit 5",
            tmp_path,
            conf,
            env={**os.environ, "BASH_ENV": str(bash_env)},
        )
    finally:
        if conf is not None:
            conf.close()
    assert code == 5, out
    assert out.splitlines() == ["from-bash-env", "SigIgn:\t0000000000000000"]


@needs_linux
def test_a_child_whose_parent_died_before_it_asked_exits_before_exec(tmp_path: Path) -> None:
    # The kernel signals only a parent's death after the request; one that came before it
    # (here: a parent other than the one that bound the request) must stop the child itself.
    death = ParentDeath(signal.SIGKILL)
    death.parent = os.getppid()  # not the process that forks: as if it had been reparented
    target = tmp_path / "ran"
    done = subprocess.run(["touch", str(target)], preexec_fn=death, check=False, timeout=30)
    assert done.returncode == 1 and not target.exists()
    death.parent = os.getpid()
    assert subprocess.run(["touch", str(target)], preexec_fn=death, timeout=30).returncode == 0
    assert target.exists()
