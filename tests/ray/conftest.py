"""A real local Ray for the pool's tests: started once, two CPUs, loopback only.

The tools the tests give their pools live in `_tools.py`, shipped to the hosts by value (the
test modules are not importable in Ray's workers).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

# On Linux Ray turns a node address of 127.0.0.1 into the machine's outward address (the one
# its default route uses), so `_node_ip_address` alone would not keep the cluster on loopback.
# This switch (read once, when Ray is imported) makes Ray use 127.0.0.1 everywhere; the
# workers and daemons inherit it. `ray_local` checks that it took.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


def _load_tools() -> ModuleType:
    name = "handrail_ray_test_tools"
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "_tools.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


TOOLS = _load_tools()
"""The tools module (`coding`, `with_stubborn`), shipped to the hosts by value."""


@pytest.fixture(scope="session")
def ray_local() -> Iterator[None]:
    """`ray.init` with 2 CPUs on 127.0.0.1; shut down after the last test that uses it."""
    import ray
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(TOOLS)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        addresses = {node["NodeManagerAddress"] for node in ray.nodes()}
        assert addresses == {"127.0.0.1"}, f"Ray left loopback: {addresses}"
        yield
    finally:
        ray.shutdown()


def pids_in(root: Path) -> list[int]:
    """Processes whose working directory is under `root` (a workspace, a host's directory)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == root or root in cwd.parents:
            found.append(int(entry.name))
    return found


def pids_running(marker: str) -> list[int]:
    """Processes whose command line contains `marker`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry.name))
    return found
