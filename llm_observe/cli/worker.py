"""One worker of ``serve --workers N``: what differs from the single process.

The supervisor (``supervisor.py``) starts each worker as ``llm-observe serve`` with
``LLM_OBSERVE_WORKER_INDEX=K`` and ``PROMETHEUS_MULTIPROC_DIR`` in its environment. A
worker then binds every door with ``SO_REUSEPORT``, leaves the scrape port to the
supervisor (which serves the sum of every worker's files), spools under
``<spool_dir>/worker-K`` (a restarted worker K drains what its predecessor left there;
it owns the directory only once the predecessor let go: :func:`spool_lock_wait_s`),
mirrors its scrape-time metric families into its files (:class:`WorkerDuties`), and
drains and exits when the supervisor is gone.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llm_observe.collector.settings import OFFLOAD_BOUNDS

log = logging.getLogger("llm_observe.serve")

INDEX_ENV = "LLM_OBSERVE_WORKER_INDEX"
COUNT_ENV = "LLM_OBSERVE_WORKER_COUNT"  # N, set by the supervisor beside the index
MAX_WORKERS = 256
# beyond shutdown_timeout_s: the predecessor notices its supervisor is gone (1 s), closes
# its doors (up to 5 s of grace) and then drains; the supervisor's own margin is the same
PREDECESSOR_MARGIN_S = 10.0


def parse_workers(value: str) -> int:
    """``--workers``: a whole number >= 1, or ``auto`` (the cores this process may use)."""
    text = str(value).strip().lower()
    if text == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count() or 1
    if text.isdigit() and 1 <= int(text) <= MAX_WORKERS:
        return int(text)
    raise ValueError(f"--workers must be a whole number 1-{MAX_WORKERS} or auto, "
                     f"got {value!r}")


def worker_index(environ: Mapping[str, str] | None = None) -> int | None:
    """K when this process is worker K of a supervisor, else None."""
    raw = (os.environ if environ is None else environ).get(INDEX_ENV)
    return int(raw) if raw is not None and raw.isdigit() else None


def worker_count(environ: Mapping[str, str] | None = None) -> int:
    """N when this process is one of a supervisor's N workers, else 1."""
    raw = (os.environ if environ is None else environ).get(COUNT_ENV, "")
    return int(raw) if raw.isdigit() and int(raw) >= 1 else 1


def share(total: int, index: int, count: int) -> int:
    """Worker ``index``'s part of a bound set for the whole host: the parts of ``count``
    workers add up to ``total`` (the first ``total % count`` take one more), and each is at
    least 1 (as every bound is: Settings.validate) — with more workers than the bound, the
    host runs one each (``count`` in all)."""
    return max(1, total // count + (index < total % count))


def offload_bounds(settings: Any) -> dict[str, int]:
    """The API's offload gate bounds (``api_<kind>_running`` / ``_waiting``) by field."""
    return {name: getattr(settings, name) for name in OFFLOAD_BOUNDS}


def for_worker(settings: Any, index: int, count: int = 1) -> Any:
    """Worker ``index`` of ``count``'s settings: its own spool / write-ahead directory, and
    its share of the API's offload bounds. Those bounds say how much CPU work the *host*
    takes at once (their defaults are its cores), so N workers split them rather than each
    taking them whole (N x the cores' threads for one kind of work)."""
    changes: dict[str, Any] = {name: share(value, index, count)
                               for name, value in offload_bounds(settings).items()}
    if settings.spool_dir:
        changes["spool_dir"] = str(Path(settings.spool_dir) / f"worker-{index}")
    return dataclasses.replace(settings, **changes)


def spool_lock_wait_s(settings: Any) -> float:
    """How long worker K waits to own ``worker-K``: a previous supervisor's worker K (that
    supervisor killed, this one started at once) still drains it, and exits within its
    shutdown timeout. Two drains of one directory would send, and count, files twice."""
    return float(settings.shutdown_timeout_s) + PREDECESSOR_MARGIN_S


class WorkerDuties:
    """A worker's background duties on its event loop: every ``MIRROR_INTERVAL_S``, copy
    the scrape-time families into the multiprocess files, and set ``stop`` when the
    supervisor is gone (the worker then drains and exits instead of living orphaned)."""

    def __init__(self, registry: Any) -> None:
        from llm_observe.collector.exporters.multiprocess import ScrapeTimeMirror, active

        self.mirror = ScrapeTimeMirror(registry) if active() else None
        self._task: asyncio.Task[None] | None = None

    def start(self, stop: asyncio.Event) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(stop))

    async def _run(self, stop: asyncio.Event) -> None:
        from llm_observe.collector.exporters.multiprocess import MIRROR_INTERVAL_S

        parent = os.getppid()
        while not stop.is_set():
            if self.mirror is not None:
                self.mirror.sync()
            if os.getppid() != parent:
                log.warning("worker: the supervisor (pid %d) is gone; draining and exiting",
                            parent)
                stop.set()
                return
            try:
                await asyncio.wait_for(stop.wait(), MIRROR_INTERVAL_S)
            except TimeoutError:
                pass

    async def stop(self) -> None:
        """After the drain: stop the loop and write the final values."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.mirror is not None:
            self.mirror.sync()
