"""Loop-lag trace for ``bench.hostile --trace FILE`` (loaded by the ``serve`` process it
starts, through PYTHONPATH; does nothing elsewhere).

What holds the event loop: every loop callback over 5 ms is logged to FILE with its task's
coroutine (``cb <ms> end <perf_counter> <coroutine>``), and while one runs past 5 ms a
watchdog thread samples the loop thread's stack every 2 ms; the counts per stack
(innermost first) are written to ``FILE.<pid>.samples`` every second. The clock is
``time.perf_counter`` (CLOCK_MONOTONIC), the bench's own: its probe times line up.
Every cyclic-GC collection over 1 ms is logged too (``gc <ms> gen <n> end <t> <thread>``):
a collection holds the GIL, so whichever thread runs it, the loop waits.
"""

from __future__ import annotations

import asyncio.events
import collections
import gc
import os
import sys
import threading
import time
from types import FrameType
from typing import Any

SLOW_S = 0.005
SAMPLE_S = 0.002


def _stack(frame: FrameType | None, depth: int = 7) -> str:
    out: list[str] = []
    while frame is not None and len(out) < depth:
        code = frame.f_code
        path = code.co_filename.split("site-packages/")[-1].split("python3.11/")[-1]
        out.append(f"{path}:{frame.f_lineno}:{code.co_name}")
        frame = frame.f_back
    return " < ".join(out)


def install(path: str) -> None:
    log = open(path, "a", buffering=1)  # noqa: SIM115 (open for the process's life)
    running: dict[str, Any] = {"since": None, "thread": None}
    samples: collections.Counter[str] = collections.Counter()
    run = asyncio.events.Handle._run

    def timed(handle: asyncio.events.Handle) -> None:
        began = running["since"] = time.perf_counter()
        running["thread"] = threading.get_ident()
        try:
            run(handle)
        finally:
            running["since"] = None
            took = time.perf_counter() - began
            if took > SLOW_S:
                owner = getattr(handle._callback, "__self__", None)  # a task's step
                what = getattr(owner, "get_coro", lambda: handle._callback)()
                log.write(f"cb {took * 1000:.1f} end {time.perf_counter():.3f} "
                          f"{repr(what)[:100]}\n")

    def watch() -> None:
        written = time.perf_counter()
        while True:
            time.sleep(SAMPLE_S)
            since = running["since"]
            if since is not None and time.perf_counter() - since > SLOW_S:
                samples[_stack(sys._current_frames().get(running["thread"]))] += 1
            if time.perf_counter() - written > 1.0:
                written = time.perf_counter()
                with open(f"{path}.{os.getpid()}.samples", "w") as out:
                    out.writelines(f"{n} {s}\n" for s, n in samples.most_common(80))

    gc_began: dict[str, float] = {}

    def collection(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_began["t"] = time.perf_counter()
            return
        took = time.perf_counter() - gc_began.pop("t", time.perf_counter())
        if took > 0.001:
            log.write(f"gc {took * 1000:.1f} gen {info['generation']} end "
                      f"{time.perf_counter():.3f} {threading.current_thread().name}\n")

    gc.callbacks.append(collection)
    asyncio.events.Handle._run = timed  # type: ignore[method-assign]
    threading.Thread(target=watch, daemon=True, name="bench-looplag").start()


if os.environ.get("BENCH_LOOPLAG") and "serve" in sys.argv:
    install(os.environ["BENCH_LOOPLAG"])
