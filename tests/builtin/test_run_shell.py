"""run_shell and shell_output through the real Runtime: real bash, real processes, real sandbox."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import tracemalloc
import uuid
from pathlib import Path

import pytest
from inline_snapshot import snapshot

from handrail import Approval, ErrorCode, Interrupted, ProgressEvent, Registry, Runtime, ToolCall
from handrail.builtin import EditFile, ReadFile, RunShell, ShellOutput, WriteFile
from handrail.sandbox import SandboxSupport, sandbox_support

SUPPORT = sandbox_support()
needs_sandbox = pytest.mark.skipif(
    not SUPPORT.available, reason=f"no OS sandbox on this machine: {SUPPORT.reason}"
)
needs_namespaces = pytest.mark.skipif(
    not SUPPORT.namespaces, reason="this machine does not allow PID/mount/network namespaces"
)
NO_SANDBOX = SandboxSupport(landlock=0, namespaces=False, user_namespace=False, reason="test: none")


def runtime(root: Path, *tools: object, mode: str = "bypass", **kw: object) -> Runtime:
    chosen = tools or (RunShell(), ShellOutput())
    return Runtime(Registry(list(chosen)), root=root, mode=mode, **kw)  # type: ignore[arg-type]


def marker() -> str:
    """A unique sleep duration: it names our processes in /proc without matching anything else."""
    return f"1000.{uuid.uuid4().int % 10**9:09d}"


def pids_with(text: str) -> list[int]:
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != b"Z" and "pytest" not in cmd:
            out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


async def wait_for_pids(text: str, count: int) -> list[int]:
    for _ in range(500):  # at most ~5 s
        found = pids_with(text)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.01)
    raise AssertionError(f"processes with {text!r} never appeared")


# -- plain runs --------------------------------------------------------------------------------


async def test_success_output_and_metadata(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    r = await rt.call("run_shell", {"command": "echo hello; echo warn >&2"})
    assert r.ok, r.content
    assert "hello" in r.content and "warn" in r.content
    assert r.metadata["exit_code"] == 0
    assert r.metadata["timed_out"] is False


async def test_empty_success_says_no_output(tmp_path: Path) -> None:
    r = await runtime(tmp_path).call("run_shell", {"command": "true"})
    assert r.ok and r.content == "(no output)"


async def test_nonzero_exit_shows_code_and_both_streams(tmp_path: Path) -> None:
    r = await runtime(tmp_path).call(
        "run_shell", {"command": "echo out-line; echo err-line >&2; exit 3"}
    )
    assert not r.ok and r.error is ErrorCode.NONZERO_EXIT
    assert r.metadata["exit_code"] == 3
    assert r.content.startswith("Exit code 3.")
    assert "out-line" in r.content and "err-line" in r.content


async def test_killed_by_signal_is_named(tmp_path: Path) -> None:
    r = await runtime(tmp_path).call("run_shell", {"command": "kill -9 $$"})
    assert r.error is ErrorCode.NONZERO_EXIT
    assert r.metadata["exit_code"] == 137 and r.metadata["signal"] == "SIGKILL"
    assert "SIGKILL" in r.content


async def test_cat_without_arguments_returns_at_once(tmp_path: Path) -> None:
    # stdin is /dev/null: a command waiting for input sees end of file instead of hanging.
    r = await runtime(tmp_path).call("run_shell", {"command": "cat", "timeout_seconds": 30})
    assert r.ok and r.content == "(no output)"
    assert r.metadata["timed_out"] is False


async def test_runs_in_session_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    rt = Runtime(Registry([RunShell()]), root=tmp_path, cwd=tmp_path / "sub", mode="bypass")
    r = await rt.call("run_shell", {"command": "pwd"})
    assert r.content.strip() == str(tmp_path / "sub")


async def test_environment_drops_api_keys_and_never_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("HANDRAIL_TOKEN", "also-secret")
    monkeypatch.setenv("MY_VISIBLE", "visible-value")
    # Credentials by their usual names, which `printenv` (read-only, unasked) would show.
    secrets = {
        "GITHUB_TOKEN": "ghp-canary",
        "AWS_SECRET_ACCESS_KEY": "aws-canary",
        "STRIPE_API_KEY": "stripe-canary",
        "DB_PASSWORD": "db-canary",
        "CLIENT_SECRET": "client-canary",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    r = await runtime(tmp_path).call("run_shell", {"command": "env"})
    assert "sk-secret-value" not in r.content and "also-secret" not in r.content
    assert not [v for v in secrets.values() if v in r.content]
    assert "MY_VISIBLE=visible-value" in r.content
    assert "GIT_TERMINAL_PROMPT=0" in r.content and "PAGER=cat" in r.content


async def test_env_deny_is_configurable_by_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handrail.permissions import Settings

    monkeypatch.setenv("CORP_SECRET", "hidden-value")
    rt = runtime(tmp_path, settings=Settings(tools={"run_shell": {"env_deny": ["CORP_*"]}}))
    r = await rt.call("run_shell", {"command": "env"})
    assert "hidden-value" not in r.content


# -- validation --------------------------------------------------------------------------------


async def test_timeout_over_limit_states_unit_and_limit(tmp_path: Path) -> None:
    r = await runtime(tmp_path).call("run_shell", {"command": "ls", "timeout_seconds": 120000})
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot("""\
timeout_seconds is in seconds and must be between 1 and 600 (10 minutes); got 120000. That looks like milliseconds: 120 seconds would be 120000 / 1000. For longer work, use run_in_background=true and check it with shell_output.
Call `run_shell` again with corrected arguments.\
""")


async def test_empty_command_is_refused(tmp_path: Path) -> None:
    r = await runtime(tmp_path).call("run_shell", {"command": "   "})
    assert r.error is ErrorCode.INVALID_ARGS and "command is empty" in r.content


# -- timeouts and process trees ----------------------------------------------------------------


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandboxed", "unsandboxed"])
async def test_timeout_kills_setsid_and_double_forked_children(
    tmp_path: Path, sandbox: bool
) -> None:
    if sandbox and not SUPPORT.available:
        pytest.skip(f"no OS sandbox on this machine: {SUPPORT.reason}")
    if not SUPPORT.namespaces:
        # Without a PID namespace the tree is found through /proc and the pipes it holds; a
        # daemon that double-forked and closed its pipes is out of reach (README: limits).
        pytest.skip("this machine does not allow PID namespaces")
    a, b, c = marker(), marker(), marker()
    # A setsid child, a double-forked daemon that closed the pipes, and one that ignores SIGTERM.
    command = (
        f"setsid sleep {a} & "
        f"( ( exec sleep {b} </dev/null >/dev/null 2>&1 & ) & ) ; "
        f"( trap '' TERM; exec sleep {c} ) & "
        "echo started; sleep 1000"
    )
    rt = runtime(tmp_path, RunShell(sandbox=sandbox))
    task = asyncio.ensure_future(rt.call("run_shell", {"command": command, "timeout_seconds": 1}))
    pids = [*await wait_for_pids(a, 1), *await wait_for_pids(b, 1), *await wait_for_pids(c, 1)]
    r = await task
    assert r.error is ErrorCode.TIMEOUT
    assert r.metadata["timed_out"] is True
    assert "started" in r.content  # the output so far
    assert "Timed out after 1 s" in r.content
    left = [p for p in pids if alive(p)]
    assert left == [], f"still running: {left}"


async def test_background_children_do_not_outlive_a_finished_command(tmp_path: Path) -> None:
    m = marker()
    rt = runtime(tmp_path)
    task = asyncio.ensure_future(
        rt.call("run_shell", {"command": f"setsid sleep {m} & sleep 0.5; echo done"})
    )
    pids = await wait_for_pids(m, 1)
    r = await task
    assert r.ok and "done" in r.content
    assert [p for p in pids if alive(p)] == []


async def test_cancel_kills_the_tree(tmp_path: Path) -> None:
    m = marker()
    rt = runtime(tmp_path)
    call = ToolCall(id="c1", name="run_shell", arguments=f'{{"command": "sleep {m}"}}')
    async with rt.stream() as ex:
        ex.submit(call)
        pids = await wait_for_pids(m, 1)
        rt.cancel("c1")
        ex.close()
        results = [item async for item in ex if not isinstance(item, ProgressEvent)]
    assert results[0].error is ErrorCode.CANCELLED
    assert [p for p in pids if alive(p)] == []


# -- output ------------------------------------------------------------------------------------


async def test_huge_output_keeps_memory_bounded_and_spills_to_file(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    tracemalloc.start()
    try:
        # 200 MB of numbered lines: head and tail reach the model, the rest goes to a file.
        r = await rt.call(
            "run_shell", {"command": "seq 1 30000000 | head -c 200000000; echo; echo END"}
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.ok, r.content[:500]
    assert peak < 32 * 1024 * 1024, f"peak traced memory {peak / 1e6:.1f} MB"
    assert len(r.content) <= 32_000
    assert r.content.startswith("1\n2\n3\n")
    assert r.content.rstrip().endswith("END")
    assert "omitted" in r.content
    out_file = Path(r.metadata["output_file"])
    assert out_file.stat().st_size == 200_000_000 + len("\nEND\n")
    assert str(out_file) in r.content


async def test_progress_events_carry_recent_lines(tmp_path: Path) -> None:
    events: list[ProgressEvent] = []
    rt = runtime(tmp_path, on_progress=events.append)
    r = await rt.call(
        "run_shell", {"command": "for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.25; done"}
    )
    assert r.ok
    lines = [line for e in events for line in e.data.get("lines", [])]
    assert any(line.startswith("line-") for line in lines)


# -- background jobs ---------------------------------------------------------------------------


async def test_background_job_reports_output_and_exit(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    r = await rt.call(
        "run_shell",
        {"command": "echo first; sleep 0.3; echo second", "run_in_background": True},
    )
    assert r.ok and r.metadata["job_id"] == "sh-1"
    assert "Started background job sh-1" in r.content
    out = await rt.call("shell_output", {"job_id": "sh-1", "wait_seconds": 10})
    assert out.ok and "exited with code 0" in out.content
    assert "first" in out.content and "second" in out.content
    again = await rt.call("shell_output", {"job_id": "sh-1"})
    assert "(no new output)" in again.content
    notices = rt.session.take_notices()
    assert len(notices) == 1
    assert notices[0].startswith(
        "Background job sh-1 (`echo first; sleep 0.3; echo second`) exited with code 0 after "
    )


async def test_background_job_keeps_its_timeout(tmp_path: Path) -> None:
    m = marker()
    rt = runtime(tmp_path)
    r = await rt.call(
        "run_shell", {"command": f"sleep {m}", "run_in_background": True, "timeout_seconds": 1}
    )
    pids = await wait_for_pids(m, 1)
    out = await rt.call("shell_output", {"job_id": r.metadata["job_id"], "wait_seconds": 30})
    assert "stopped at its time limit of 1 s" in out.content
    assert [p for p in pids if alive(p)] == []
    assert any("time limit" in n for n in rt.session.take_notices())


async def test_background_jobs_die_with_the_session(tmp_path: Path) -> None:
    m = marker()
    rt = runtime(tmp_path)
    await rt.call(
        "run_shell", {"command": f"setsid sleep {m}; sleep {m}", "run_in_background": True}
    )
    pids = await wait_for_pids(m, 1)
    await rt.aclose()
    assert [p for p in pids if alive(p)] == []


async def test_shell_output_stop_and_unknown_job(tmp_path: Path) -> None:
    m = marker()
    rt = runtime(tmp_path)
    await rt.call("run_shell", {"command": f"sleep {m}", "run_in_background": True})
    pids = await wait_for_pids(m, 1)
    r = await rt.call("shell_output", {"job_id": "sh-1", "stop": True})
    assert "Job sh-1 was stopped." in r.content
    assert [p for p in pids if alive(p)] == []
    bad = await rt.call("shell_output", {"job_id": "sh-9"})
    assert bad.error is ErrorCode.INVALID_ARGS
    assert bad.content == snapshot(
        "There is no background job 'sh-9' in this session. Known jobs: sh-1."
    )


# -- the OS sandbox ----------------------------------------------------------------------------


@needs_sandbox
async def test_sandbox_refuses_writes_outside_the_write_roots(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    rt = runtime(root)
    r = await rt.call(
        "run_shell",
        {
            "command": (
                f"echo in > inside.txt && echo ok-inside; "
                f"echo x > {outside}/a.txt; "
                f"sh -c 'echo y > {outside}/b.txt'; "  # a child process is confined too
                'echo t > "$TMPDIR/t" && echo ok-tmp'
            )
        },
    )
    assert "ok-inside" in r.content and "ok-tmp" in r.content
    assert (root / "inside.txt").read_text() == "in\n"
    assert not (outside / "a.txt").exists() and not (outside / "b.txt").exists()
    # `outside` lies under the host's /tmp, which the command does not see (its /tmp is the
    # session's own); elsewhere every mount is read-only (EROFS, which also stops chmod/touch).
    assert any(
        why in r.content
        for why in ("Permission denied", "Read-only file system", "Directory nonexistent")
    )


@needs_sandbox
@needs_namespaces
async def test_sandbox_keeps_git_and_handrail_read_only(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / ".handrail").mkdir()
    rt = runtime(tmp_path)
    r = await rt.call(
        "run_shell",
        {"command": "echo evil > .git/HEAD; rm -f .git/HEAD; touch .handrail/x; echo done"},
    )
    assert (tmp_path / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert not (tmp_path / ".handrail" / "x").exists()
    assert "Read-only file system" in r.content


@needs_sandbox
@needs_namespaces
async def test_sandbox_has_no_network_unless_allowed(tmp_path: Path) -> None:
    # A server on the host's loopback: reachable from the host, not from the sandbox.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    probe = (
        'python3 -c "import socket,sys\n'
        f"try: socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\n"
        "except OSError as e: print('refused', e.errno)\""
    )
    try:
        off = await runtime(tmp_path).call("run_shell", {"command": probe})
        on = await runtime(tmp_path, RunShell(network=True)).call("run_shell", {"command": probe})
    finally:
        stop.set()
        t.join(5)
        server.close()
    assert "refused" in off.content, off.content
    assert "connected" in on.content, on.content


async def test_no_sandbox_refuses_by_default(tmp_path: Path) -> None:
    rt = runtime(tmp_path, RunShell(support=NO_SANDBOX))
    r = await rt.call("run_shell", {"command": "echo hi"})
    assert r.error is ErrorCode.SANDBOX_UNAVAILABLE
    assert r.content == snapshot(
        "run_shell cannot run this command: no OS sandbox is available on this machine (test: none), and the configuration does not allow running commands unsandboxed. Use the file tools (read_file, grep_search, list_files, edit_file) instead, or ask the user to enable a sandbox or set allow_unsandboxed in the run_shell settings."
    )


async def test_no_sandbox_runs_only_when_the_user_allowed_it(tmp_path: Path) -> None:
    from handrail.permissions import Settings

    rt = runtime(
        tmp_path,
        RunShell(support=NO_SANDBOX),
        settings=Settings(tools={"run_shell": {"allow_unsandboxed": True}}),
    )
    r = await rt.call("run_shell", {"command": "echo hi"})
    assert r.ok and r.metadata["sandbox"] == "none"
    assert r.content.startswith("(No OS sandbox on this machine: test: none.")
    assert r.content.endswith("hi")


async def test_the_model_cannot_switch_the_sandbox_off(tmp_path: Path) -> None:
    r = await runtime(tmp_path).call("run_shell", {"command": "ls", "sandbox": False})
    assert r.error is ErrorCode.INVALID_ARGS


# -- permissions and scheduling ----------------------------------------------------------------


async def test_plan_mode_allows_read_only_commands_and_denies_the_rest(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    rt = runtime(tmp_path, RunShell(), ReadFile(), WriteFile(), EditFile(), mode="plan")
    ok = await rt.call("run_shell", {"command": "cat a.txt | wc -l && git status --short || true"})
    assert ok.ok, ok.content
    for command in ["touch b.txt", "echo x > a.txt", "ls && rm a.txt", "echo $(rm a.txt)"]:
        r = await rt.call("run_shell", {"command": command})
        assert r.error is ErrorCode.PERMISSION_DENIED, command
        assert "plan mode" in r.content
    assert (tmp_path / "a.txt").read_text() == "hello\n"


async def test_compound_commands_do_not_match_a_prefix_rule(tmp_path: Path) -> None:
    rt = runtime(tmp_path, mode="default", allow=["run_shell(echo hi:*)"])
    allowed = await rt.call("run_shell", {"command": "echo hi there && echo hi again"})
    assert allowed.ok
    for command in ["echo hi && touch x", "echo hi; touch x", "echo hi | sh", "echo hi > f"]:
        r = await rt.call("run_shell", {"command": command})
        assert isinstance(r, Interrupted), command
    assert not (tmp_path / "x").exists() and not (tmp_path / "f").exists()


async def test_approved_command_runs(tmp_path: Path) -> None:
    rt = runtime(tmp_path, mode="default")
    r = await rt.call("run_shell", {"command": "touch made.txt"})
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.allow_once())
    assert done.ok and (tmp_path / "made.txt").exists()


def test_read_only_commands_are_concurrency_safe() -> None:
    from handrail.builtin._run_shell import RunShellArgs

    tool = RunShell()
    assert tool.is_concurrency_safe(RunShellArgs(command="git status && ls -la"))
    assert tool.is_read_only(RunShellArgs(command="grep -rn foo . | head"))
    assert not tool.is_read_only(RunShellArgs(command="npm test"))
    assert not tool.is_concurrency_safe(RunShellArgs(command="ls", run_in_background=True))


async def test_read_only_commands_run_in_parallel(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    span = '{"command": "date +%s%N; sleep 0.5; date +%s%N"}'
    batch = await rt.call_many(
        [
            ToolCall(id="1", name="run_shell", arguments=span),
            ToolCall(id="2", name="run_shell", arguments=span),
        ]
    )
    (s1, e1), (s2, e2) = ([int(x) for x in r.content.split()] for r in batch.results)
    assert s1 < e2 and s2 < e1  # the two runs overlapped


async def test_files_changed_since_read_are_named(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("two\n")
    rt = runtime(tmp_path, RunShell(), ReadFile())
    await rt.call("read_file", {"file_path": "a.txt"})
    await rt.call("read_file", {"file_path": "b.txt"})
    r = await rt.call("run_shell", {"command": "echo more >> a.txt"})
    assert r.metadata["changed_files"] == [str(tmp_path / "a.txt")]
    assert r.content.replace(str(tmp_path), "<ws>") == snapshot("""\
(no output)
Files read earlier in this session that changed while the command ran (read them again before editing): <ws>/a.txt\
""")
    quiet = await rt.call("run_shell", {"command": "cat b.txt"})
    assert "changed_files" not in quiet.metadata


async def test_no_file_descriptors_leak(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    await rt.call("run_shell", {"command": "true"})  # first use opens what lives for the process

    def open_fds() -> set[str]:
        out: set[str] = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                out.add(f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
            except FileNotFoundError:  # the listing's own fd, closed already
                continue
        return out

    before = open_fds()
    for command in ["echo hi", "seq 1 200000", "exit 3"]:
        await rt.call("run_shell", {"command": command})
    await rt.call("run_shell", {"command": "sleep 30", "timeout_seconds": 1})
    await rt.call("run_shell", {"command": "sleep 30", "run_in_background": True})
    await rt.aclose()
    assert open_fds() - before == set()


async def test_an_overlong_command_is_refused_before_it_runs(tmp_path: Path) -> None:
    r = await runtime(tmp_path).call("run_shell", {"command": "echo " + "a" * 300_000})
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot("""\
command is longer than 100,000 bytes, more than one shell command line should hold. Write the script to a file with write_file and run it, e.g. `bash script.sh`.
Call `run_shell` again with corrected arguments.\
""")


async def test_a_huge_timeout_is_not_mistaken_for_milliseconds(tmp_path: Path) -> None:
    r = await runtime(tmp_path).call("run_shell", {"command": "ls", "timeout_seconds": 1e12})
    assert r.error is ErrorCode.INVALID_ARGS
    assert "milliseconds" not in r.content
    assert "between 1 and 600" in r.content


async def test_a_job_id_is_bounded(tmp_path: Path) -> None:
    r = await runtime(tmp_path).call("shell_output", {"job_id": "x" * 10_000})
    assert r.error is ErrorCode.INVALID_ARGS
    assert len(r.content) < 400


async def test_a_workspace_venv_on_an_interpreter_under_the_hidden_home_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # uv and pyenv keep interpreters under the home, which the sandbox hides; a venv built on
    # one must still start (its base installation is bound back, nothing else of the home).
    home = tmp_path / "home"
    base = home / ".local" / "share" / "uv" / "python" / "cpython-test"
    ws = home / "project"
    (base / "bin").mkdir(parents=True)
    (ws / ".venv" / "bin").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("CANARY-VENV-KEY\n")
    interpreter = base / "bin" / "python3"
    interpreter.write_text("#!/bin/sh\necho interpreter-ran\n")
    interpreter.chmod(0o755)
    # What `uv venv` writes: the base's bin folder in pyvenv.cfg, python a symlink to it.
    (ws / ".venv" / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\nversion = 3.12\n")
    (ws / ".venv" / "bin" / "python").symlink_to(interpreter)
    monkeypatch.setenv("HOME", str(home))
    rt = Runtime(Registry([RunShell()]), root=ws, mode="bypass")
    try:
        r = await rt.call("run_shell", {"command": ".venv/bin/python; cat ~/.ssh/id_rsa"})
    finally:
        await rt.aclose()
    assert r.metadata.get("reads") == "confined"
    assert "interpreter-ran" in r.content, r.content
    assert "CANARY-VENV-KEY" not in r.content
