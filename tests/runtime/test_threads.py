"""The worker pool behind sync tools."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from handrail.runtime._threads import WorkerPool


async def test_results_and_exceptions_come_back() -> None:
    pool = WorkerPool(max_workers=2)
    assert await pool.submit(lambda a, b: a + b, 2, 3) == 5

    def boom() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await pool.submit(boom)


async def test_pool_never_exceeds_its_thread_cap_and_stays_parallel() -> None:
    pool = WorkerPool(max_workers=3)
    running = 0
    peak = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.05)
        with lock:
            running -= 1

    # Saturate: 9 items on 3 workers, twice; the pool must still use all 3 workers after.
    for _ in range(2):
        await asyncio.gather(*(pool.submit(work) for _ in range(9)))
    peak = 0
    await asyncio.gather(*(pool.submit(work) for _ in range(3)))
    assert peak == 3
    assert pool._threads == 3  # no thread leak past the limit
