"""How long work held the event loop, measured so that a busy machine does not count.

A 10 ms timer ticks on the loop while the work runs. Its wall-clock lateness counts
everything that kept the loop from turning: our code running on the loop, but also other
processes on a loaded machine and other threads holding the GIL. The CPU time the loop's
own thread spends in one tick (``time.thread_time``) counts only what ran on the loop, so
a bound on it holds on a busy CI machine as on an idle one. A hold without CPU (a blocking
call on the loop) still shows in the wall time, bounded generously beside it.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

WALL_CEILING_S = 2.0  # a blocking call on the loop; far above any scheduling delay seen


@dataclass
class Holds:
    cpu: float  # the most CPU the loop's thread spent in one tick, seconds
    wall: float  # the worst lateness of one tick, seconds

    def check(self, cpu_bound: float) -> None:
        assert self.cpu < cpu_bound, f"the loop was held {self.cpu * 1000:.0f} ms of CPU " \
            f"(worst tick {self.wall * 1000:.0f} ms wall)"
        assert self.wall < WALL_CEILING_S, f"the loop stood still {self.wall:.2f} s " \
            f"with {self.cpu * 1000:.0f} ms of CPU: a blocking call on the loop?"


async def worst_hold(work: Awaitable[Any]) -> tuple[Holds, Any]:
    """Run ``work`` while a 10 ms timer ticks; the worst tick and the work's result.

    The heap is frozen first, as ``llm-observe serve`` freezes its start-up heap: the
    suite's own objects from earlier tests would otherwise be rescanned by any full
    garbage collection, a pause no collector process has.
    """
    gc.collect()
    gc.freeze()
    try:
        task = asyncio.ensure_future(work)
        holds = Holds(0.0, 0.0)
        while not task.done():
            wall, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(0.01)
            holds.cpu = max(holds.cpu, time.thread_time() - cpu)
            holds.wall = max(holds.wall, time.perf_counter() - wall - 0.01)
        return holds, await task
    finally:
        gc.unfreeze()
