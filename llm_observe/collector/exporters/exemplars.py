"""Trace exemplars: the latency, TTFT, cost and token series point at a span behind them.

Per label group (``LlmMetrics._flush``), the group's spans of a batch give each family an
exemplar ``{trace_id, span_id}`` with the span's own value: the slowest span for the
latency histograms (spec and GenAI), the slowest first token for the TTFT ones, the
priciest (else the slowest) for ``llm_cost_usd_micro_total`` and the token series (spec
counters, GenAI token histogram). A histogram's exemplar goes on the bucket its value falls
in, so each bucket keeps the latest that fell into it: a p99 spike on the latency panel
leads to a slow call. Picks are C loops (``map``/``max``/``index``) over the spans the group
collected anyway. Served in the OpenMetrics exposition only; the text format is unchanged.

All of a group's exemplars are picked again at most once a window (``WINDOW_S``); within it
a batch only checks (one ``max``) whether it holds a call slower than every call of the
window so far, and sets that one's latency exemplars. Prometheus stores one exemplar per
series and scrape (5 s), so picking every batch is wasted work (it measured 1.5-1.9x a
metric update, ``bench.exemplars``); the window's slowest call still gets its exemplar.

Ids are checked on the picked span only: hex, 8-32 characters, so the labels stay within
OpenMetrics' 128-character limit (Prometheus fails a scrape past it) whatever a REST caller
sent; a span with other ids gives no exemplar.

Kept on the prometheus_client value in one process; in ``serve --workers`` the library's
file-backed values drop exemplars, so the sink is ``multiprocess_exemplars.WorkerExemplars``.
Event-loop thread only (as ``LlmMetrics.record``).
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from prometheus_client.samples import Exemplar

from llm_observe.semconv import STATUS_ERROR
from llm_observe.span import LlmSpan

if TYPE_CHECKING:
    from llm_observe.collector.exporters.label_sets import Group

__all__ = ["Exemplars"]

_ID = re.compile(r"[0-9a-fA-F]{8,32}")
_LATENCY = attrgetter("latency_ms_total")
_TTFT = attrgetter("latency_ms_ttft")
_COST = attrgetter("cost_usd_micro")
Sink = Callable[[Any, Exemplar], None]
WINDOW_S = 1.0


def _on_value(value: Any, exemplar: Exemplar) -> None:
    # MutexValue.set_exemplar's lock guards this one assignment, atomic under the GIL; the
    # exposition reads ``_exemplar`` without it too (series_render.py)
    value._exemplar = exemplar


def _top(spans: Sequence[LlmSpan], get: Callable[[LlmSpan], Any],
         values: Sequence[Any] | None = None) -> tuple[LlmSpan, Any] | None:
    """The span with the largest truthy value of ``get`` and that value; None if none.

    ``values``: the group's already collected values when they align with ``spans``.
    """
    if values is None or len(values) != len(spans):
        values = list(map(get, spans))
    best = max(filter(None, values), default=None)
    if best is None:
        return None
    return spans[values.index(best)], best


def _labels(span: LlmSpan) -> dict[str, str] | None:
    trace, span_id = span.trace_id, span.span_id
    if trace and span_id and _ID.fullmatch(trace) and _ID.fullmatch(span_id):
        return {"trace_id": trace, "span_id": span_id}
    return None


def _genai_key(span: LlmSpan) -> Any:
    # the tally key of LlmMetrics._flush_genai
    return span.actual_model if span.status != STATUS_ERROR \
        else (span.actual_model, span.error_type)


class Exemplars:
    """Sets one group's exemplars for a batch; ``sink`` stores each (default: on the value).

    ``window_s``: a group's exemplars are all picked again at most once a window; within
    it a batch only sets a latency exemplar, and only for a call slower than every call of
    the window so far. Prometheus keeps one exemplar per series and scrape (5 s), so picking
    more often is wasted; the slowest call of each window still gets its exemplar.
    """

    def __init__(self, sink: Sink | None = None, window_s: float = WINDOW_S) -> None:
        self.sink = sink or _on_value
        self.window_s = window_s

    def group(self, g: Group, spans: Sequence[LlmSpan], latency: Sequence[int],
              ttft: Sequence[int]) -> None:
        """The exemplars of group ``g`` from its spans of one batch (already counted)."""
        if not spans:
            return
        now = time.time()
        if now < g.exemplars_until:
            if latency and max(latency) > g.slowest:
                hit = _top(spans, _LATENCY, latency)
                if hit is not None:
                    g.slowest = hit[1]
                    self._latency(g, hit[0], hit[1], now)
            return
        g.exemplars_until = now + self.window_s
        slow = _top(spans, _LATENCY, latency)
        g.slowest = slow[1] if slow is not None else 0
        if slow is not None:
            self._latency(g, slow[0], slow[1], now)
        hit = _top(spans, _TTFT, ttft)
        if hit is not None and (labels := _labels(hit[0])) is not None:
            span, value = hit
            self._bucket(g.ttft, labels, value, now)
            s = g.genai.get(_genai_key(span))
            if s is not None:
                self._bucket(s.ttft, labels, value / 1000, now)
        # the priciest call (else the slowest) for the cost and both token series
        hit = _top(spans, _COST) or slow
        if hit is None or (labels := _labels(hit[0])) is None:
            return
        span, sink = hit[0], self.sink
        if span.cost_usd_micro:
            sink(g.cost._value, Exemplar(labels, span.cost_usd_micro, now))
        s = g.genai.get(_genai_key(span))
        for value, child, side in ((span.prompt_tokens, g.prompt, "input"),
                                   (span.completion_tokens, g.completion, "output")):
            if value:
                sink(child._value, Exemplar(labels, value, now))
                if s is not None:
                    self._bucket(getattr(s, side), labels, value, now)

    def _latency(self, g: Group, span: LlmSpan, value: float, now: float) -> None:
        labels = _labels(span)
        if labels is None:
            return
        self._bucket(g.latency, labels, value, now)
        s = g.genai.get(_genai_key(span))
        if s is not None:
            self._bucket(s.duration, labels, value / 1000, now)

    def _bucket(self, child: Any, labels: dict[str, str], value: float, now: float) -> None:
        """On the bucket ``value`` falls in (LlmMetrics' histograms: buckets.py's layout)."""
        self.sink(child._buckets[bisect_left(child._upper_bounds, value)],
                  Exemplar(labels, value, now))
