"""The text exposition of a registry, rendered so that one bad family cannot fail a scrape.

``generate_latest(registry)`` renders every family into one string and encodes it at
the end: a single unencodable label value (a lone surrogate) or one collector that
raises loses the whole scrape, on every scrape. :class:`Exposition` renders each
collector's families one by one: a family that fails is rendered again with its label
values and help text cleaned (:func:`clean_label`), and left out, logged and counted
only if that fails too. Its own self-metric is rendered last, after this scrape's count.

Counter, gauge and histogram objects are rendered by :class:`series_render.FamilyRender`,
which keeps each label set's lines and re-renders only the sets that changed since the last
scrape (byte-identical output); everything else (scrape-time self-metrics, the multiprocess
sum) the library's way. Both formats: the Prometheus text format 0.0.4 and OpenMetrics 1.0.0,
the one with exemplars. A global series budget (``max_series`` sample lines over every metric
object) bounds the whole exposition beside the per-family label-set budgets: label sets past
it are left out of that scrape and counted in ``llm_observe_scrape_series_left_out_total``.

Thread-safe (prometheus_client's values carry their own locks; renders take turns): the
scrape server calls :meth:`Exposition.render` on an executor thread, off the event loop.
"""

from __future__ import annotations

import copy
import gc
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from llm_observe.collector.exporters.labels import clean_label
from llm_observe.collector.exporters.series_render import (
    OPENMETRICS,
    TEXT,
    FamilyRender,
    Paused,
    SeriesBudget,
    Unsupported,
    supported,
)
from llm_observe.collector.longlived import long_lived

log = logging.getLogger(__name__)

RENDER_ERRORS = "llm_observe_scrape_render_errors"
LEFT_OUT = "llm_observe_scrape_series_left_out"
MAX_SERIES = 1_000_000  # Settings.max_scrape_series
_EOF = b"# EOF\n"
PIECE = 256 * 1024  # bytes per piece of a rendered exposition (render_pieces)


def encode(families: list[Metric], fmt: str) -> bytes:
    """``families`` in ``fmt`` by prometheus_client, without OpenMetrics' closing ``# EOF``."""
    if fmt == TEXT:
        return generate_latest(_Families(families))
    body: bytes = generate_openmetrics(_Families(families))  # type: ignore[no-untyped-call]
    return body[:-len(_EOF)]


class NothingRendered(Exception):
    """Every family of the registry failed to render: there is no exposition to answer."""


class _Families:
    """A collector over given families, in the shape ``generate_latest`` takes."""

    __slots__ = ("families",)

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> list[Metric]:
        return self.families


class Exposition:
    """Renders ``registry``; registers its own self-metrics on it (rendered last)."""

    def __init__(self, registry: CollectorRegistry, max_series: int = MAX_SERIES) -> None:
        if max_series < 1:
            raise ValueError("max_series must be >= 1")
        self.registry = registry
        self.max_series = max_series
        self.errors = 0  # families that raised while rendering: repaired or left out
        self.left_out = 0  # sample lines left out of scrapes by the series budget
        self._reported: set[str] = set()  # log a failing family's traceback once
        self._fast: dict[object, FamilyRender] = {}
        self._slow: set[object] = set()  # objects the fast path refused: the library's way
        self._lock = threading.Lock()
        self._budget_logged = False
        registry.register(self)

    def describe(self) -> list[Metric]:
        return self._own()

    def collect(self) -> list[Metric]:
        return self._own()

    def _own(self) -> list[Metric]:
        return [CounterMetricFamily(
            RENDER_ERRORS, "Metric families that failed to render on a scrape (repaired "
            "with cleaned labels, or left out of it)", value=self.errors),
            CounterMetricFamily(
            LEFT_OUT, "Sample lines left out of scrapes because the exposition reached its "
            "series budget (LLM_OBSERVE_MAX_SCRAPE_SERIES)", value=self.left_out)]

    def render(self, fmt: str = TEXT) -> bytes:
        """The exposition in the Prometheus text format 0.0.4 (``TEXT``) or OpenMetrics
        1.0.0 (``OPENMETRICS``, with exemplars and the closing ``# EOF``).

        Never raises because of one family or collector; raises NothingRendered when
        none rendered at all.
        """
        return b"".join(self.render_pieces(fmt, sys.maxsize))  # one piece: not copied again

    def render_pieces(self, fmt: str = TEXT, size: int = PIECE) -> list[bytes]:
        """:meth:`render`'s bytes in pieces, in order, each ending at the first label set past
        ``size`` bytes: a scrape sends them without joining ~30 MB into one first."""
        if fmt not in (TEXT, OPENMETRICS):
            raise ValueError(f"unknown exposition format {fmt!r}")
        with self._rendering():
            return _pieces(self._render(fmt), size)

    def prepare(self, fmt: str = TEXT, pause: Callable[[], bool] | None = None) -> bool:
        """Render, ahead of a scrape, the label sets of the metric objects that no scrape
        has rendered yet; their lines are kept for the next scrape in ``fmt``. ``pause``,
        called every few new sets, may sleep; True from it stops here (returns False).

        A hostile client fills the label-set budget over a few batches; rendered as they
        come, the sets are not all new to the first scrape after (the cost of a set's first
        render is ~3x that of a set that changed). Sets that only changed are left to the
        scrape: rendered now, most would change again before it.
        """
        if fmt not in (TEXT, OPENMETRICS):
            raise ValueError(f"unknown exposition format {fmt!r}")
        with self._rendering():
            budget, sink = SeriesBudget(self.max_series), list[bytes]()
            for collector in registry_collectors(self.registry):
                if collector is not self:
                    try:
                        self._fast_family(collector, fmt, budget, sink, True, pause)
                    except Paused:
                        return False
                    sink.clear()
        return True

    @contextmanager
    def _rendering(self) -> Iterator[None]:
        """One render at a time, with the cyclic GC paused.

        Why paused: a histogram family at the label-set budget was ~120,000 short-lived
        samples, alive until the family was rendered, so collections promoted them and
        triggered a full collection of the whole heap (180-620 ms measured, GIL held: the
        event loop stalled). The label sets' kept lines a render makes live until exit:
        frozen at once if enough were made (collector/longlived.py), before a collection
        would scan them all.
        """
        with self._lock:
            paused = gc.isenabled()
            gc.disable()
            try:
                yield
            finally:
                long_lived.settle(young_first=False)
                if paused:
                    gc.enable()

    def _render(self, fmt: str) -> list[bytes]:
        parts: list[bytes] = []
        failed = 0
        budget = SeriesBudget(self.max_series)
        collectors = registry_collectors(self.registry)
        self._forget(collectors)
        for collector in collectors:
            if collector is self or self._fast_family(collector, fmt, budget, parts):
                continue
            try:
                families = list(collector.collect())
            except Exception as exc:
                failed += 1
                self._report(f"collector {type(collector).__name__}", "left out", exc)
                continue
            for family in families:
                body = self._family(family, fmt)
                if body is None:
                    failed += 1
                else:
                    parts.append(body)
        if failed:
            self.errors += failed
            if not parts:
                raise NothingRendered(f"all {failed} metric families failed to render")
        if budget.left_out:
            self.left_out += budget.left_out
            if not self._budget_logged:
                self._budget_logged = True
                log.warning("scrape: %d sample lines over the series budget of %d left out "
                            "(logged once, counted in %s_total)", budget.left_out,
                            self.max_series, LEFT_OUT)
        parts.append(encode(self._own(), fmt))
        if fmt == OPENMETRICS:
            parts.append(_EOF)
        return parts

    def _fast_family(self, collector: object, fmt: str, budget: SeriesBudget,
                     parts: list[bytes], only_new: bool = False,
                     pause: Callable[[], bool] | None = None) -> bool:
        """Append ``collector`` by :class:`FamilyRender`; False: render it the library's
        way (nothing of it appended)."""
        if collector in self._slow or not supported(collector):
            return False
        fam = self._fast.get(collector)
        mark, left, left_out = len(parts), budget.left, budget.left_out
        try:
            if fam is None:
                fam = self._fast[collector] = FamilyRender(collector)
            fam.render(fmt, budget, parts, only_new, pause)
            return True
        except Unsupported as exc:
            log.debug("scrape: %r rendered by prometheus_client (%s)", collector, exc)
        except Exception as exc:  # a label value that cannot encode: repaired below
            log.debug("scrape: %r rendered by prometheus_client (%r)", collector, exc)
        del parts[mark:]  # rendered again the library's way
        budget.left, budget.left_out = left, left_out
        self._slow.add(collector)
        self._fast.pop(collector, None)
        return False

    def _forget(self, collectors: list[Any]) -> None:
        """Drop what is kept for objects no longer registered."""
        if len(self._fast) + len(self._slow) > len(collectors):
            live = {id(c) for c in collectors}
            self._fast = {c: f for c, f in self._fast.items() if id(c) in live}
            self._slow = {c for c in self._slow if id(c) in live}

    def _family(self, family: Metric, fmt: str) -> bytes | None:
        try:
            return encode([family], fmt)
        except Exception as exc:
            first = exc
        try:
            body = encode([_cleaned(family)], fmt)
        except Exception:
            self._report(f"family {family.name!r}", "left out", first)
            return None
        self.errors += 1
        self._report(f"family {family.name!r}", "rendered with cleaned label values", first)
        return body

    def _report(self, what: str, outcome: str, exc: BaseException) -> None:
        if what in self._reported:
            log.debug("scrape: %s failed to render (%r); %s", what, exc, outcome)
            return
        self._reported.add(what)
        log.error("scrape: %s failed to render; %s (logged once, counted in %s_total)",
                  what, outcome, RENDER_ERRORS, exc_info=exc)


def registry_collectors(registry: CollectorRegistry) -> list[Any]:
    """The registry's collectors, one by one, so that one that raises loses only its own.

    prometheus_client keeps them in ``_collector_to_names`` under ``_lock`` (every
    release since 0.1); without that layout the registry is rendered as one collector.
    """
    names = getattr(registry, "_collector_to_names", None)
    lock = getattr(registry, "_lock", None)
    if not isinstance(names, dict) or lock is None:
        return [registry]
    with lock:
        return list(names)


def _pieces(parts: list[bytes], size: int) -> list[bytes]:
    """``parts`` joined into pieces of at least ``size`` bytes (the last one shorter)."""
    out: list[bytes] = []
    start = total = 0
    for i, part in enumerate(parts, 1):
        total += len(part)
        if total >= size:
            out.append(b"".join(parts[start:i]))
            start, total = i, 0
    if start < len(parts):
        out.append(b"".join(parts[start:]))
    return out


def _cleaned(family: Metric) -> Metric:
    """A copy of ``family`` whose help text and label values are all encodable."""
    out = copy.copy(family)
    out.documentation = clean_label(str(family.documentation))
    out.samples = [s._replace(labels={k: clean_label(str(v)) for k, v in s.labels.items()})
                   for s in family.samples]
    return out
