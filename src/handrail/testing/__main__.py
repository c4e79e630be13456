"""`python -m handrail.testing --script FILE [--port N]`: serve a script until interrupted.

Prints the server's URL on stdout (one line, flushed), serves until SIGINT or SIGTERM, then
prints the problems found to stderr. For demos, and for driving a CLI by hand.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from types import FrameType

from ._script import load_script
from ._server import ModelServer


def main(argv: list[str] | None = None) -> int:
    """Run the server in the foreground; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m handrail.testing",
        description="Serve a scripted model (OpenAI, Anthropic, Gemini formats) on 127.0.0.1.",
    )
    parser.add_argument("--script", required=True, help="a JSON file: a list of replies and faults")
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    parser.add_argument("--require-key", metavar="KEY", help="refuse requests without this key")
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="record protocol problems but answer anyway (default: answer them with a 400)",
    )
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # A plain flag, not a threading.Event: the handler runs on the main thread, which may
    # hold the Event's lock inside wait() at that moment (setting it there deadlocks).
    stopping: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    server = ModelServer(
        script, port=args.port, require_key=args.require_key, strict=not args.lenient
    )
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot listen on port {args.port}: {exc}", file=sys.stderr)
        return 2
    try:
        print(server.url, flush=True)
        while not stopping:
            time.sleep(0.2)
    finally:
        server.close()
    requests, problems = server.requests, server.problems
    print(
        f"{len(requests)} requests, {len(server.remaining)} script items left, "
        f"{len(problems)} problems",
        file=sys.stderr,
    )
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
