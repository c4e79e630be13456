"""handrail's MCP client against the official conformance suite's client scenarios.

The suite (npm `@modelcontextprotocol/conformance`, pinned in `tests/mcp/peers`) starts its own
servers (and authorization servers) on loopback, runs `peers/client.py` with the server's URL,
and writes its verdicts to `checks.json`. `peers/client.py` is a real handrail client: an
`McpServerConfig`, `McpTools`, a `Runtime` calling each tool, and handrail's OAuth code with a
"browser" that follows the authorization server's redirects back to handrail's loopback
listener. A test fails on any FAILURE, and on any WARNING (the suite counts both against a
client; the SHOULDs of scope selection are warnings), naming the checks; beyond the verdicts
it asserts what a user of the scenario would see in the client's own output.

Scenarios: the core `initialize`, `tools_call`, `elicitation-sep1034-client-defaults` (the
client's person accepts the server's form as shown: handrail fills in the schema's defaults) and
`sse-retry`, and all 22 `auth/*`.

Every run is its own process group, killed by its PID if it outlives `RUN_LIMIT`. The runs
start together, a few at a time, when the first test needs one; `sse-retry` runs alone,
because the suite times the client's reconnection against the server's `retry` field.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import Peers

CLIENT = Path(__file__).parent / "peers" / "client.py"
RUN_LIMIT = 120.0
"""Seconds one scenario run may take before its process group is killed."""
WORKERS = 3
"""Scenario runs at once (two shared cores; each run is mostly waiting on loopback)."""

CORE = ("initialize", "tools_call", "elicitation-sep1034-client-defaults")
AUTH = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
)
TIMED = "sse-retry"
TIMING_CHECK = "client-sse-retry-timing"
"""May warn when a loaded machine reconnects a little late; a FAILURE still fails."""


@dataclass(frozen=True)
class Run:
    """What one scenario left: the suite's checks, the client's output, its token folder."""

    scenario: str
    checks: list[dict[str, Any]]
    stdout: str
    state: Path

    def stored_tokens(self) -> int:
        """Sign-ins the client kept (token files holding tokens)."""
        folder = self.state / "mcp-oauth"
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
        return sum("tokens" in json.loads(f.read_text()) for f in files)


def _run(scenario: str, peers: Peers, folder: Path) -> Run:
    """Run one scenario with the client in its own folder, bounded by `RUN_LIMIT`."""
    folder.mkdir(parents=True)
    command = f"{sys.executable} {CLIENT}"
    assert " " not in sys.executable and " " not in str(CLIENT), "the suite splits on spaces"
    env = dict(os.environ, HANDRAIL_STATE_DIR=str(folder / "state"))
    argv = [*peers.conformance, "client", "--command", command, "--scenario", scenario]
    argv += ["-o", "results", "--timeout", str(int(RUN_LIMIT * 1000 / 2))]
    proc = subprocess.Popen(
        argv,
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the suite's shell and the client go with it
    )
    try:
        output, _ = proc.communicate(timeout=RUN_LIMIT)
    except subprocess.TimeoutExpired:
        output = ""
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
    found = sorted((folder / "results").glob("**/checks.json"))
    assert len(found) == 1, f"{scenario}: no checks.json (exit {proc.returncode}):\n{output}"
    checks: list[dict[str, Any]] = json.loads(found[0].read_text())
    stdout = (found[0].parent / "stdout.txt").read_text()
    assert checks, f"{scenario}: the suite wrote no checks"
    return Run(scenario=scenario, checks=checks, stdout=stdout, state=folder / "state")


@pytest.fixture(scope="module")
def runs(
    mcp_peers: Peers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Run]]]:
    """Every scenario of this module, started together (a few at a time)."""
    base = tmp_path_factory.mktemp("conformance-client")
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {
            s: pool.submit(_run, s, mcp_peers, base / s.replace("/", "-")) for s in CORE + AUTH
        }
        yield futures
        for future in futures.values():
            future.cancel()


def _verdicts(run: Run, allowed_warnings: tuple[str, ...] = ()) -> list[str]:
    bad = [
        c
        for c in run.checks
        if c["status"] == "FAILURE"
        or (c["status"] == "WARNING" and c["id"] not in allowed_warnings)
    ]
    return [f"{c['id']} {c['status']}: {c.get('errorMessage') or c['description']}" for c in bad]


# -- what a user of each scenario sees in the client's output -----------------------------------


def _called(run: Run) -> None:
    # The tool ran through handrail's pipeline and its text came back.
    assert "mcp__conformance__test-tool: ok=True test" in run.stdout, run.stdout
    assert run.stored_tokens() == 1  # the sign-in is kept for the next session


def _sum(run: Run) -> None:
    assert "mcp__conformance__add_numbers: ok=True The sum of 2 and 2 is 4" in run.stdout


def _defaults(run: Run) -> None:
    # The server's tool saw the form accepted with every default filled in by handrail.
    passed = {c["id"] for c in run.checks if c["status"] == "SUCCESS"}
    kinds = ("string", "integer", "number", "enum", "boolean")
    assert {f"client-elicitation-sep1034-{k}-default" for k in kinds} <= passed, run.checks


def _machine(run: Run) -> None:
    assert "mcp__conformance__test-tool: ok=True test" in run.stdout, run.stdout


def _mismatch(run: Run) -> None:
    # Refused before any authorization: the reason names both resources; nothing is kept.
    assert "does not match expected" in run.stdout and "evil.example.com" in run.stdout
    assert run.stored_tokens() == 0


def _retry_limit(run: Run) -> None:
    # The scope the server asks for was granted already: handrail does not sign in again.
    attempts = [c for c in run.checks if c["id"] == "scope-retry-auth-attempt"]
    assert len(attempts) == 1, attempts
    assert "HTTP 403 insufficient_scope, it wants scope `mcp:admin`" in run.stdout, run.stdout


def _step_up(run: Run) -> None:
    _called(run)
    requests = [c for c in run.checks if c["id"] == "authorization-request"]
    scopes = [c["details"]["query"].get("scope") for c in requests]
    assert scopes == ["mcp:basic", "mcp:basic mcp:write"]  # the grant widened, not replaced


EXTRA: dict[str, Callable[[Run], None]] = {
    **{s: _called for s in AUTH},
    "tools_call": _sum,
    "initialize": lambda run: None,
    "elicitation-sep1034-client-defaults": _defaults,
    "auth/client-credentials-jwt": _machine,
    "auth/client-credentials-basic": _machine,
    "auth/cross-app-access-complete-flow": _machine,
    "auth/resource-mismatch": _mismatch,
    "auth/scope-retry-limit": _retry_limit,
    "auth/scope-step-up": _step_up,
}


# -- tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", CORE + AUTH)
def test_scenario_passes(scenario: str, runs: dict[str, Future[Run]]) -> None:
    run = runs[scenario].result(timeout=RUN_LIMIT * len(runs))
    bad = _verdicts(run)
    assert not bad, f"{scenario}: checks not passed:\n" + "\n".join(bad) + f"\n{run.stdout}"
    EXTRA[scenario](run)


def test_sse_retry_reconnects_after_the_servers_retry(
    mcp_peers: Peers, tmp_path: Path, runs: dict[str, Future[Run]]
) -> None:
    for future in runs.values():  # alone: the suite times the reconnection
        future.result(timeout=RUN_LIMIT * len(runs))
    run = _run(TIMED, mcp_peers, tmp_path / "sse-retry")
    bad = _verdicts(run, allowed_warnings=(TIMING_CHECK,))
    assert not bad, f"{TIMED}: checks not passed:\n" + "\n".join(bad) + f"\n{run.stdout}"
    assert "ok=True Reconnection test completed successfully" in run.stdout, run.stdout
