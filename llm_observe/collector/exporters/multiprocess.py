"""One exposition for the workers of ``serve --workers N``: prometheus_client's multiprocess
mode.

Why this way: each worker keeps its metric values in a file of its own
(``PROMETHEUS_MULTIPROC_DIR/<type>_<pid>.db``, memory-mapped by prometheus_client's
``MmapedValue``), and the process serving ``/metrics`` merges them with the library's
``MultiProcessCollector``: counters and histograms summed over every worker that ever ran
(a worker restarted keeps its predecessor's counts in the sum), gauges by the mode
declared on each (``livesum``: the forwarder's queue and spool gauges). No socket or lock
between workers, no home-made protocol; an update costs a write into a mapped page instead
of a float add (``bench.receiver``, ``metrics_update_multiprocess_vs_single``). The batched
histogram writes (``buckets.py``) call ``.inc`` on ``_buckets[i]`` and ``_sum``, which are
``MmapedValue``s in this mode too, so they stay one write per touched bucket.

Families built at scrape time by a custom collector (``PipelineStats``, the embedding and
reported-cost stats: plain numbers, no lock on the hot path) have no file of their own:
:class:`ScrapeTimeMirror` copies their current values into the worker's files every
``MIRROR_INTERVAL_S`` and once more after the drain at shutdown. They are all counters,
so they are summed too; a gauge family would be mirrored ``livesum``.

Exemplars, which the library's multiprocess mode drops, are kept and merged by
``multiprocess_exemplars.py``: :meth:`ScrapeTimeMirror.sync` writes the worker's, and
:func:`summed_registry` attaches the newest of every worker's to the summed samples.
"""

from __future__ import annotations

import glob
import logging
import os
from typing import Any

from prometheus_client import CollectorRegistry, values
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.multiprocess import mark_process_dead

from llm_observe.collector.exporters.exposition import Exposition, registry_collectors
from llm_observe.collector.exporters.multiprocess_exemplars import (
    PATTERN,
    MergedExemplars,
    worker_store,
)

__all__ = ["ENV", "MIRROR_INTERVAL_S", "ScrapeTimeMirror", "active", "forget_worker",
           "prepare_dir", "summed_registry"]

log = logging.getLogger(__name__)

ENV = "PROMETHEUS_MULTIPROC_DIR"  # read by prometheus_client when it is first imported
MIRROR_INTERVAL_S = 1.0
_MODES = {"counter": "", "gauge": "livesum"}  # file type -> multiprocess mode


def active() -> bool:
    """True when this process writes its metrics to the multiprocess directory."""
    return bool(getattr(values.ValueClass, "_multiprocess", False))


def prepare_dir(path: str) -> None:
    """Empty ``path`` of a previous run's files (the library's rule: wipe it between runs)."""
    os.makedirs(path, exist_ok=True)
    for old in (*glob.glob(os.path.join(path, "*.db")), *glob.glob(os.path.join(path, PATTERN))):
        os.remove(old)


def summed_registry(path: str) -> CollectorRegistry:
    """A registry whose collection is every worker's files in ``path``, merged (exemplars
    too)."""
    registry = CollectorRegistry()
    registry.register(MergedExemplars(path))  # type: ignore[arg-type]
    return registry


def forget_worker(pid: int, path: str) -> None:
    """A worker exited: its ``live*`` gauges leave the sum (its counters stay)."""
    mark_process_dead(pid, path)  # type: ignore[no-untyped-call]


class ScrapeTimeMirror:
    """Writes the scrape-time families of a worker's ``registry`` into its multiprocess
    files. Call :meth:`sync` from one thread at a time (the worker's event loop)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._values: dict[tuple[str, str, tuple[tuple[str, str], ...]], Any] = {}
        self._skipped: set[str] = set()

    def sync(self) -> int:
        """Copy every current sample (and write the worker's exemplars); return how many
        samples were written."""
        store = worker_store()
        if store is not None:
            store.flush()
        written = 0
        for collector in registry_collectors(self.registry):
            # metric objects write their own files; the exposition's count is the scraping
            # process's own
            if isinstance(collector, MetricWrapperBase | Exposition):
                continue
            try:
                families = list(collector.collect())
            except Exception:
                log.exception("worker metrics: %s failed to collect", type(collector).__name__)
                continue
            for family in families:
                written += self._family(family)
        return written

    def _family(self, family: Any) -> int:
        mode = _MODES.get(family.type)
        if mode is None:
            if family.name not in self._skipped:
                self._skipped.add(family.name)
                log.warning("worker metrics: %s family %s is not summed across workers",
                            family.type, family.name)
            return 0
        written = 0
        for sample in family.samples:
            if family.type == "counter" and not sample.name.endswith("_total"):
                continue  # _created: a per-process time, meaningless summed
            labels = tuple(sorted((str(k), str(v)) for k, v in sample.labels.items()))
            key = (family.name, sample.name, labels)
            value = self._values.get(key)
            if value is None:
                value = self._values[key] = values.ValueClass(
                    family.type, family.name, sample.name, [k for k, _ in labels],
                    [v for _, v in labels], family.documentation, multiprocess_mode=mode)
            value.set(float(sample.value))
            written += 1
        return written
