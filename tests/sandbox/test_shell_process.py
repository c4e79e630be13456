"""ShellProcess and Confinement: real processes, real namespaces and Landlock where available."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handrail.sandbox import (
    Confinement,
    SandboxSupport,
    ShellProcess,
    namespace_members,
    read_log,
    sandbox_support,
)
from handrail.sandbox._capture import OutputCapture

SUPPORT = sandbox_support()
needs_sandbox = pytest.mark.skipif(
    not SUPPORT.available, reason=f"no OS sandbox on this machine: {SUPPORT.reason}"
)
needs_namespaces = pytest.mark.skipif(
    not SUPPORT.namespaces, reason="this machine does not allow PID/mount/network namespaces"
)


async def run(command: str, cwd: Path, conf: Confinement | None = None) -> tuple[int | None, str]:
    cap = OutputCapture(None)
    proc = await ShellProcess.start(
        command, cwd=cwd, env=dict(os.environ), capture=cap, confinement=conf
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
    assert "PermissionError" in out
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
