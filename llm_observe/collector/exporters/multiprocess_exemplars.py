"""Exemplars across the workers of ``serve --workers N``.

prometheus_client's multiprocess mode drops exemplars: its file-backed value's
``set_exemplar`` does nothing and ``MultiProcessCollector`` reads no exemplar (0.26:
"TODO: Implement exemplars for multiprocess mode"). Without this module a ``--workers``
collector would serve OpenMetrics without a single exemplar.

So each worker keeps its latest exemplar per series in memory (:class:`WorkerExemplars`,
the ``LlmMetrics`` exemplar sink: one dict store per exemplar, keyed by the value's own
multiprocess key) and writes them, when any changed, to ``exemplars_<pid>.json`` beside
its ``.db`` files, atomically (temporary file + rename), on the mirror's cadence
(``ScrapeTimeMirror.sync``: every second and after the drain). The supervisor's scrape
(:class:`MergedExemplars`, wrapping ``MultiProcessCollector``) reads every worker's file
(parsed again only when it changed) and attaches to each summed counter and bucket sample
the newest exemplar any worker holds for it. A worker that exits leaves its file: its
exemplars point at real traces and give way to newer ones.

A scrape sees exemplars up to ``MIRROR_INTERVAL_S`` old, as the mirrored self-metrics.
"""

from __future__ import annotations

import glob
import json
import logging
import os
from typing import Any

from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.samples import Exemplar

__all__ = ["PATTERN", "MergedExemplars", "WorkerExemplars", "worker_store"]

log = logging.getLogger(__name__)

PATTERN = "exemplars_*.json"
_SampleKey = tuple[str, frozenset[tuple[str, str]]]


class WorkerExemplars:
    """One worker's latest exemplar per series. :meth:`keep` on the event loop, :meth:`flush`
    from one thread at a time."""

    def __init__(self, path: str, pid: int | None = None) -> None:
        self.path = os.path.join(path, f"exemplars_{pid or os.getpid()}.json")
        self.latest: dict[str, Exemplar] = {}
        self.dirty = False

    def keep(self, value: Any, exemplar: Exemplar) -> None:
        """The exemplar sink: ``value`` is a multiprocess value (its ``_key`` names the series)."""
        key = getattr(value, "_key", None)
        if key is not None:
            self.latest[key] = exemplar
            self.dirty = True

    def flush(self) -> bool:
        """Write the file if an exemplar changed since the last flush; True if written."""
        if not self.dirty:
            return False
        self.dirty = False
        rows = [[k, e.labels, e.value, e.timestamp] for k, e in list(self.latest.items())]
        tmp = f"{self.path}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(rows, f, separators=(",", ":"))
            os.replace(tmp, self.path)
        except OSError:
            self.dirty = True  # try again next time
            log.warning("worker metrics: cannot write %s", self.path, exc_info=True)
            return False
        return True


_store: WorkerExemplars | None = None


def worker_store(path: str | None = None) -> WorkerExemplars | None:
    """This process's store when it writes multiprocess metrics (``PROMETHEUS_MULTIPROC_DIR``),
    else None."""
    global _store
    path = path or os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not path:
        return None
    if _store is None or os.path.dirname(_store.path) != path:
        _store = WorkerExemplars(path)
    return _store


def _time(ex: Exemplar) -> float:
    return float(ex.timestamp or 0)  # written by WorkerExemplars: a float or None


def _sample_key(mmap_key: str) -> _SampleKey:
    # prometheus_client's mmap_key: [metric name, sample name, {label: value}, help]
    _metric, name, labels, _help = json.loads(mmap_key)
    return name, frozenset(labels.items())


class MergedExemplars:
    """``MultiProcessCollector`` over ``path`` plus every worker's newest exemplars."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.summed = MultiProcessCollector(None, path)  # type: ignore[no-untyped-call]
        self._files: dict[str, tuple[float, dict[_SampleKey, Exemplar]]] = {}

    def collect(self) -> list[Metric]:
        families: list[Metric] = list(self.summed.collect())  # type: ignore[no-untyped-call]
        newest = self._newest()
        if not newest:
            return families
        for family in families:
            if family.type not in ("counter", "histogram"):
                continue
            family.samples = [
                s._replace(exemplar=newest.get((s.name, frozenset(s.labels.items()))))
                if s.name.endswith(("_total", "_bucket")) else s for s in family.samples]
        return families

    def _newest(self) -> dict[_SampleKey, Exemplar]:
        newest: dict[_SampleKey, Exemplar] = {}
        seen: dict[str, tuple[float, dict[_SampleKey, Exemplar]]] = {}
        for name in glob.glob(os.path.join(self.path, PATTERN)):
            try:
                mtime = os.stat(name).st_mtime_ns
                cached = self._files.get(name)
                if cached is None or cached[0] != mtime:
                    cached = (mtime, self._read(name))
            except (OSError, ValueError):
                log.warning("scrape: cannot read worker exemplars %s", name, exc_info=True)
                continue
            seen[name] = cached
            for key, ex in cached[1].items():
                old = newest.get(key)
                if old is None or _time(ex) > _time(old):
                    newest[key] = ex
        self._files = seen
        return newest

    @staticmethod
    def _read(name: str) -> dict[_SampleKey, Exemplar]:
        with open(name, encoding="utf-8") as f:
            rows = json.load(f)
        return {_sample_key(key): Exemplar(dict(labels), value, ts)
                for key, labels, value, ts in rows}
