"""The one worker thread for CPU-bound work taken off the event loop.

A large request is decoded and sorted, enriched and re-encoded off the loop so other
clients are served meanwhile (receiver, pipeline, forwarder). Each of those used a pool of
its own; with four senders that is up to six threads contending for the GIL beside the
loop and gRPC's, and on two cores the hand-offs cost more than the work they moved: the
full receiver with ~200-character texts spent ~90 µs of CPU a span with the pools and
~64 µs with this one thread (bench.receiver, same run; issue 24). The work is Python, so
one thread loses no parallelism; it runs jobs in submission order. Even its hand-offs cost
~10-20 % of the CPU a span against the loop alone, so only requests too big to run on the
loop in steps come here (:mod:`pipeline.placement`).

Process-wide and never shut down by its users (a pipeline or forwarder closing must not
stop another's work); a forked child gets a fresh one on first use.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def cpu_executor() -> ThreadPoolExecutor:
    """The shared single-thread executor (created on first use)."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(1, thread_name_prefix="llm-observe-cpu")
        return _executor


def _forget_in_child() -> None:
    # A fork copies the executor but not its thread: jobs would queue forever.
    global _executor, _lock
    _executor, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
