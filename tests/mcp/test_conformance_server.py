"""`handrail serve --http` against the official MCP conformance suite's server scenarios.

The suite (npm `@modelcontextprotocol/conformance`, pinned in `tests/mcp/peers`) connects to a
real server process on 127.0.0.1 as an MCP client and writes its verdicts to `checks.json`;
a test fails on any FAILURE and names the failed checks. Two servers:

- the `handrail serve --http` command (the built-in coding tools) for the protocol scenarios:
  `server-initialize`, `ping`, `tools-list`, `server-sse-multiple-streams`,
  `dns-rebinding-protection`;
- `servers/conformance_tools_server.py`: a `Registry` of handrail tools with the names the
  suite calls, served by `handrail.mcp.serve`, for `tools-list`, the `tools-call-*` scenarios
  handrail can express (text, image, audio, embedded resource, mixed content, an error,
  progress, a tool's question as an elicitation), `json-schema-2020-12` (a raw-schema tool)
  and `server-sse-polling` (its `test_reconnection` tool).

Each runs twice: with the bearer token (the default of `serve --http`) and with `--no-auth`.
The suite has no option for a header, so for the token runs Node preloads a module
(`--import`) that adds `Authorization: Bearer <token>` to every request its HTTP client
(undici's global dispatcher, used by `fetch` and by `undici.request`) sends; the suite's code
is unchanged. A control run without the token shows the server refuses the suite then.

All scenario runs start together (a few at a time) when the first test needs one, so the
module costs about as long as its slowest run plus the servers' start-up.

Not run, as they do not apply to handrail's tools-only server:

- `resources-*`, `prompts-*`, `completion-complete`: handrail serves tools only (no
  resources, no prompts, hence nothing to complete);
- `logging-set-level`, `tools-call-with-logging`: the server does not offer MCP logging
  (`logging/setLevel` is "Method not found"); a running tool reports progress, which is
  tested;

A served tool's `Elicitation` reaches the client with its form, and the values the client fills
in reach the tool (`elicitation-sep1034-defaults`, `elicitation-sep1330-enums`, and
`test_a_served_tool_gets_the_values_its_user_filled_in`); a served tool's sampling request goes
to the client's model (`tools-call-sampling`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from .conftest import Peers

SERVERS = Path(__file__).parent / "servers"
TOKEN = "conformance-token-0123456789abcdef"
WAIT = 60.0
"""Seconds a server may take to start (a bound, not a speed threshold)."""
RUN_LIMIT = 120.0
"""Seconds one scenario run may take before it is killed."""
WORKERS = 3
"""Scenario runs at once (two shared cores; the suite's own waits are short)."""

Auth = Literal["token", "no-auth", "withheld"]
"""`token`: the server needs it and the suite sends it; `no-auth`: `--no-auth`;
`withheld`: the server needs it and the suite does not send it (the control)."""

SEND_TOKEN = """\
// Adds the bearer token to every request of this Node process (fetch and undici alike).
import { createRequire } from "node:module";
// The undici the suite itself imports: resolved from the suite's own file.
const require = createRequire(process.env.HANDRAIL_TEST_SUITE);
const { getGlobalDispatcher, setGlobalDispatcher } = require("undici");
const value = `Bearer ${process.env.HANDRAIL_TEST_BEARER}`;
function withToken(headers) {
  if (headers == null) return { authorization: value };
  if (Array.isArray(headers)) return [...headers, "authorization", value];
  if (typeof headers[Symbol.iterator] === "function") {
    const flat = [];
    for (const [name, v] of headers) flat.push(name, v);
    return [...flat, "authorization", value];
  }
  return { ...headers, authorization: value };
}
setGlobalDispatcher(
  getGlobalDispatcher().compose(
    (dispatch) => (opts, handler) => dispatch({ ...opts, headers: withToken(opts.headers) }, handler),
  ),
);
"""


@dataclass(frozen=True)
class Case:
    """One scenario run: which server, which scenario, and how the token goes."""

    server: Literal["cli", "tools"]
    scenario: str
    auth: Auth

    @property
    def id(self) -> str:
        return f"{self.server}-{self.auth}-{self.scenario}"


PROTOCOL = (
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
TOOL_SCENARIOS = (
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-elicitation",
    "tools-call-sampling",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "json-schema-2020-12",
    "server-sse-polling",
)


def _cases() -> list[Any]:
    cases: list[Any] = []
    for auth in ("token", "no-auth"):
        cases += [pytest.param(Case("cli", s, auth), id=f"cli-{auth}-{s}") for s in PROTOCOL]
        cases += [
            pytest.param(Case("tools", s, auth), id=f"tools-{auth}-{s}") for s in TOOL_SCENARIOS
        ]
    return cases


CONTROL = Case("cli", "server-initialize", "withheld")
ELICITATION = Case("tools", "tools-call-elicitation", "no-auth")


# -- servers ------------------------------------------------------------------------------------


@dataclass
class Served:
    """A server process on 127.0.0.1 and the file its output goes to."""

    proc: subprocess.Popen[bytes]
    log: Path


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM by PID, then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _start(argv: list[str], folder: Path, env: dict[str, str]) -> Served:
    log = folder.parent / f"{folder.name}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv, cwd=folder, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env
        )
    return Served(proc=proc, log=log)


def _url_of(served: Served) -> str:
    """The URL the server printed once listening; bounded in polls (and so in time)."""
    for _ in range(int(WAIT / 0.05)):
        text = served.log.read_text()
        if served.proc.poll() is not None:
            raise AssertionError(f"the server exited with {served.proc.returncode}: {text}")
        for word in text.split():
            if word.startswith("http://127.0.0.1:") and word.endswith("/mcp"):
                return word
        time.sleep(0.05)
    raise AssertionError(f"the server printed no URL in {WAIT} s: {served.log.read_text()}")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, bool], str]]:
    """Four servers, started together: (`cli` | `tools`, needs the token) -> URL."""
    base = tmp_path_factory.mktemp("conformance-servers")
    (base / "xdg").mkdir()  # an empty user config: nothing from this machine leaks in
    env = {k: v for k, v in os.environ.items() if k != "HANDRAIL_SERVE_TOKEN"}
    env.pop("XDG_RUNTIME_DIR", None)
    env["XDG_CONFIG_HOME"] = str(base / "xdg")
    started: dict[tuple[str, bool], Served] = {}
    try:
        for kind in ("cli", "tools"):
            for needs_token in (True, False):
                folder = base / f"{kind}-{'token' if needs_token else 'open'}"
                folder.mkdir()
                (folder / "notes.txt").write_text("alpha\n")
                run_env = dict(env)
                if kind == "cli":
                    argv = [sys.executable, "-m", "handrail", "serve", "--http", "127.0.0.1:0"]
                    argv += ["--root", str(folder), "--no-settings"]
                    if needs_token:
                        run_env["HANDRAIL_SERVE_TOKEN"] = TOKEN
                    else:
                        argv.append("--no-auth")
                else:
                    argv = [sys.executable, str(SERVERS / "conformance_tools_server.py")]
                    argv += [str(folder), *(["--token", TOKEN] if needs_token else ["--no-auth"])]
                started[kind, needs_token] = _start(argv, folder, run_env)
        yield {key: _url_of(served) for key, served in started.items()}
    finally:
        for served in started.values():
            _stop(served.proc)


# -- scenario runs ------------------------------------------------------------------------------


def _run(case: Case, url: str, peers: Peers, folder: Path) -> list[dict[str, Any]]:
    """Run one scenario in its own folder and return its checks."""
    folder.mkdir()
    env = dict(os.environ)
    prefix = peers.conformance
    if case.auth == "token":
        preload = folder / "send_token.mjs"
        preload.write_text(SEND_TOKEN)
        env["HANDRAIL_TEST_SUITE"] = prefix[1]
        env["HANDRAIL_TEST_BEARER"] = TOKEN
        prefix = [prefix[0], "--import", str(preload), *prefix[1:]]
    done = subprocess.run(
        [*prefix, "server", "--url", url, "--scenario", case.scenario, "-o", "results"],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT,
    )
    found = sorted((folder / "results").glob("*/checks.json"))
    assert len(found) == 1, (
        f"{case.id}: no checks.json (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    )
    checks: list[dict[str, Any]] = json.loads(found[0].read_text())
    assert checks, f"{case.id}: the suite wrote no checks"
    return checks


@pytest.fixture(scope="module")
def runs(
    request: pytest.FixtureRequest,
    servers: dict[tuple[str, bool], str],
    mcp_peers: Peers,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[Case, Future[list[dict[str, Any]]]]]:
    """Every scenario run this session's tests of this module need, started together."""
    wanted: list[Case] = []  # in the order the tests will ask for them
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        here = getattr(item, "module", None) is request.module
        if here and spec is not None and "case" in spec.params:
            wanted.append(spec.params["case"])
    wanted += [CONTROL, ELICITATION]
    base = tmp_path_factory.mktemp("conformance-runs")
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures: dict[Case, Future[list[dict[str, Any]]]] = {}
        for case in dict.fromkeys(wanted):
            url = servers[case.server, case.auth != "no-auth"]
            folder = base / f"{case.id}-{uuid.uuid4().hex[:6]}"
            futures[case] = pool.submit(_run, case, url, mcp_peers, folder)
        yield futures
        for future in futures.values():
            future.cancel()


def _failed(checks: list[dict[str, Any]]) -> list[str]:
    return [f"{c['id']}: {c.get('errorMessage')}" for c in checks if c["status"] == "FAILURE"]


def _by_id(checks: list[dict[str, Any]], check_id: str) -> dict[str, Any]:
    (found,) = [c for c in checks if c["id"] == check_id]
    return found


# -- what a user of each scenario would notice, beyond the suite's own verdicts -----------------


def _result(checks: list[dict[str, Any]], check_id: str) -> dict[str, Any]:
    return _by_id(checks, check_id)["details"]["result"]


def _simple_text(checks: list[dict[str, Any]]) -> None:
    result = _result(checks, "tools-call-simple-text")
    assert result["content"] == [
        {"type": "text", "text": "This is a simple text response for testing."}
    ]
    assert result["isError"] is False


def _image(checks: list[dict[str, Any]]) -> None:
    details = _by_id(checks, "tools-call-image")["details"]
    assert details == {"mimeType": "image/png", "hasData": True}


def _mixed(checks: list[dict[str, Any]]) -> None:
    details = _by_id(checks, "tools-call-mixed-content")["details"]
    assert details["contentTypes"] == ["text", "image", "resource"]  # in the tool's order


def _error(checks: list[dict[str, Any]]) -> None:
    result = _result(checks, "tools-call-error")
    assert result["isError"] is True
    assert result["content"][0]["text"] == "This tool intentionally returns an error for testing"
    assert result["_meta"]["handrail/result"]["error"] == "EXECUTION_ERROR"


def _progress(checks: list[dict[str, Any]]) -> None:
    details = _by_id(checks, "tools-call-with-progress")["details"]
    sent = [n["progress"] for n in details["progressNotifications"]]
    assert len(sent) == 3, details  # one per ctx.progress, none lost or repeated
    assert sent == sorted(sent)
    assert [n.get("message") for n in details["progressNotifications"]] == [
        "0% done",
        "50% done",
        "100% done",
    ]
    assert details["result"]["content"] == [{"type": "text", "text": "Progress test completed"}]


def _rebinding(checks: list[dict[str, Any]]) -> None:
    # Refused for its Host (421), before the token is looked at; the server's own name passes.
    assert _by_id(checks, "localhost-host-rebinding-rejected")["details"]["statusCode"] == 421
    assert _by_id(checks, "localhost-host-valid-accepted")["details"]["statusCode"] == 200


def _polling(checks: list[dict[str, Any]]) -> None:
    closed = _by_id(checks, "stream-closed")["details"]
    assert closed["receivedToolResponse"] is True  # the tool's answer came on the POST stream


def _tools_listed(checks: list[dict[str, Any]]) -> None:
    tools = _by_id(checks, "tools-list")["details"]["tools"]
    assert tools, "no tools listed"


EXTRA = {
    "tools-call-simple-text": _simple_text,
    "tools-call-image": _image,
    "tools-call-mixed-content": _mixed,
    "tools-call-error": _error,
    "tools-call-with-progress": _progress,
    "dns-rebinding-protection": _rebinding,
    "server-sse-polling": _polling,
    "tools-list": _tools_listed,
}


# -- tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _cases())
def test_scenario_passes(case: Case, runs: dict[Case, Future[list[dict[str, Any]]]]) -> None:
    checks = runs[case].result(timeout=RUN_LIMIT * len(runs))
    failed = _failed(checks)
    assert not failed, f"{case.id}: failed checks:\n" + "\n".join(failed)
    extra = EXTRA.get(case.scenario)
    if extra is not None:
        extra(checks)


def test_the_suite_without_the_token_is_refused(
    runs: dict[Case, Future[list[dict[str, Any]]]],
) -> None:
    """The control: the token runs pass because the token is sent, not because none is needed."""
    checks = runs[CONTROL].result(timeout=RUN_LIMIT * len(runs))
    (check,) = checks
    assert check["status"] == "FAILURE"
    assert "Authorization: Bearer <token>" in check["errorMessage"]


def test_a_served_tool_gets_the_values_its_user_filled_in(
    runs: dict[Case, Future[list[dict[str, Any]]]],
) -> None:
    """The suite's client answers `test_elicitation` with a name and an e-mail address."""
    checks = runs[ELICITATION].result(timeout=RUN_LIMIT * len(runs))
    (text,) = [b["text"] for b in _result(checks, "tools-call-elicitation")["content"]]
    assert "testuser" in text
    assert "test@example.com" in text
