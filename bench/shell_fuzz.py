"""A longer fuzz of the shell parser: every misjudged line, not only the first.

Runs the generators of tests/permissions/test_shell_differential.py for many examples and
prints each line `parse_command` calls read-only that wrote, ran another program or never
ended, each line that ran `rm` past a `run_shell(rm:*)` deny rule, and each word whose static
value bash reads differently. Usage (from the repository root):

    python bench/shell_fuzz.py [--examples 2000] [--seed 1] [--only lines|rules|words]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent


def _load_tests() -> Any:
    path = ROOT / "tests" / "permissions" / "test_shell_differential.py"
    spec = importlib.util.spec_from_file_location("shell_differential", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _fuzz(strategy: Any, examples: int, at: int, check: Callable[[Any], None]) -> None:
    @seed(at)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(value=strategy)
    def run(value: Any) -> None:
        check(value)

    run()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=["lines", "rules", "words"])
    opts = parser.parse_args()
    warnings.simplefilter("ignore")
    t = _load_tests()
    found: dict[str, str] = {}
    started = time.monotonic()
    if opts.only in (None, "words"):

        def words(batch: list[str]) -> None:
            for word, actual in zip(batch, t.bash_values(batch), strict=False):
                expected = t.parser_values(word)
                if expected is not None and expected != actual:
                    found.setdefault(f"word {word!r}", f"parser {expected!r}, bash {actual!r}")

        _fuzz(st.lists(t.shell_words(), min_size=20, max_size=40), opts.examples, opts.seed, words)
    with contextlib.ExitStack() as stack:
        sandbox = stack.enter_context(t.make_sandbox()) if t.SUPPORT.available else None
        if sandbox is not None and opts.only in (None, "lines"):

            def lines(line: str) -> None:
                if not t.parse_command(line).read_only:
                    return
                got = t.run_traced(sandbox, line)
                bad = [*got.problems, *(f"changed {c}" for c in got.changed)]
                bad += [f"canary {h}" for h in got.canary_hits]
                bad += ["never ended"] if got.timed_out else []
                if bad:
                    found.setdefault(f"read-only {line!r}", "; ".join(bad))

            _fuzz(t.shell_lines(), opts.examples, opts.seed, lines)
        if sandbox is not None and opts.only in (None, "rules"):

            def rules(line: str) -> None:
                decision = t.rm_decision(line)
                if decision.behavior == "deny":
                    return
                if t.ran_rm(t.run_traced(sandbox, line)):
                    found.setdefault(f"rule {line!r}", f"ran rm ({decision.behavior})")

            _fuzz(t.rm_lines(), opts.examples, opts.seed, rules)
    for what, why in found.items():
        print(f"{what}\n    {why}")
    print(f"{len(found)} misjudged, {time.monotonic() - started:.0f} s")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
