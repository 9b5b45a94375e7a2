"""The text exposition of a registry, rendered so that one bad family cannot fail a scrape.

``generate_latest(registry)`` renders every family into one string and encodes it at
the end: a single unencodable label value (a lone surrogate) or one collector that
raises loses the whole scrape, on every scrape. :class:`Exposition` renders each
collector's families one by one: a family that fails is rendered again with its label
values and help text cleaned (:func:`clean_label`), and left out, logged and counted
only if that fails too. Its own self-metric is rendered last, after this scrape's count.

Thread-safe (prometheus_client's values carry their own locks): the scrape server
calls :meth:`Exposition.render` on an executor thread, off the event loop.
"""

from __future__ import annotations

import copy
import gc
import logging
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics_core import Metric

from llm_observe.collector.exporters.labels import clean_label

log = logging.getLogger(__name__)

RENDER_ERRORS = "llm_observe_scrape_render_errors"


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
    """Renders ``registry``; registers ``llm_observe_scrape_render_errors_total`` on it."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.errors = 0  # families that raised while rendering: repaired or left out
        self._reported: set[str] = set()  # log a failing family's traceback once
        registry.register(self)

    def describe(self) -> list[Metric]:
        return [self._own()]

    def collect(self) -> list[Metric]:
        return [self._own()]

    def _own(self) -> Metric:
        return CounterMetricFamily(
            RENDER_ERRORS, "Metric families that failed to render on a scrape (repaired "
            "with cleaned labels, or left out of it)", value=self.errors)

    def render(self) -> bytes:
        """The exposition in the Prometheus text format 0.0.4.

        Never raises because of one family or collector; raises NothingRendered when
        none rendered at all.
        """
        # The cyclic GC is paused while rendering: a histogram family at the label-set
        # budget is ~120,000 short-lived samples, alive until the family is rendered, so
        # collections promoted them and triggered a full collection of the whole heap
        # (180-620 ms measured, GIL held: the event loop stalled). Paused, the samples are
        # freed by reference counting as each family is done, and nothing is promoted.
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._render()
        finally:
            if paused:
                gc.enable()

    def _render(self) -> bytes:
        parts: list[bytes] = []
        failed = 0
        for collector in registry_collectors(self.registry):
            if collector is self:
                continue
            try:
                families = list(collector.collect())
            except Exception as exc:
                failed += 1
                self._report(f"collector {type(collector).__name__}", "left out", exc)
                continue
            for family in families:
                body = self._family(family)
                if body is None:
                    failed += 1
                else:
                    parts.append(body)
        if failed:
            self.errors += failed
            if not parts:
                raise NothingRendered(f"all {failed} metric families failed to render")
        parts.append(generate_latest(_Families([self._own()])))
        return b"".join(parts)

    def _family(self, family: Metric) -> bytes | None:
        try:
            return generate_latest(_Families([family]))
        except Exception as exc:
            first = exc
        try:
            body = generate_latest(_Families([_cleaned(family)]))
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


def registry_collectors(registry: CollectorRegistry) -> Iterable[Any]:
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


def _cleaned(family: Metric) -> Metric:
    """A copy of ``family`` whose help text and label values are all encodable."""
    out = copy.copy(family)
    out.documentation = clean_label(str(family.documentation))
    out.samples = [s._replace(labels={k: clean_label(str(v)) for k, v in s.labels.items()})
                   for s in family.samples]
    return out
