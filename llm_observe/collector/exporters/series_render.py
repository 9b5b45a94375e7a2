"""One metric object's exposition, re-rendering only the label sets that changed.

Why: ``generate_latest`` rebuilds every sample of every label set on every scrape (a
``Sample`` tuple, a merged and sorted label dict, an escaped label string per line). At the
full label-set budget that is ~280,000 lines and 4.5-6.5 s a scrape, past the spec's 5 s
scrape interval. :class:`FamilyRender` keeps each label set's label text and its last
rendered bytes; a scrape reads the set's raw values (C-level attribute reads: no ``Sample``,
no cumulative sums) and renders the set again only when they (or, in OpenMetrics, its
exemplars) changed: an unchanged set costs a tuple compare. A set that changed, or is new,
is rendered in C loops (``series_shape.py``).

Output is byte for byte what prometheus_client 0.26 renders for the same object in both
formats (``tests/collector/exporters/test_series_render.py`` compares them with a fresh full
render), so this reads its internals: a wrapper's ``_metrics``/``_lock``/``_labelnames``,
the children's ``_value``/``_buckets``/``_sum``/``_created``/``_upper_bounds``, and the
exposition's escaping helpers. Anything else (a summary, an info, a custom collector, a
child whose samples do not match the reader) raises :class:`Unsupported` and the caller
renders that object the library's way. Counter, gauge and histogram objects only.

Not thread-safe: one :class:`FamilyRender` is used by one render at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from prometheus_client import metrics as _metrics
from prometheus_client import values as _values
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.openmetrics import exposition as om

from llm_observe.collector.exporters.series_shape import Shape, exemplar_text, go_float
from llm_observe.collector.longlived import long_lived

__all__ = ["OPENMETRICS", "TEXT", "FamilyRender", "Paused", "SeriesBudget", "Unsupported",
           "exemplar_text", "go_float", "supported"]

TEXT = "text"  # Prometheus text format 0.0.4
OPENMETRICS = "openmetrics"  # OpenMetrics 1.0.0 (with exemplars)


class Unsupported(Exception):
    """This object is not one the fast path renders exactly; render it the library's way."""


class Paused(BaseException):
    """A pre-render stopped because its ``pause`` said so; the sets it rendered are kept.
    Not an Exception: the callers' catch-all (render the object the library's way) is for
    objects that cannot render, not for this."""


PAUSE_EVERY = 16  # new label sets a pre-render renders between calls of its ``pause``


class SeriesBudget:
    """Sample lines a scrape may still render; label sets past it are left out, counted."""

    __slots__ = ("left", "left_out")

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.left_out = 0


# A set's key (series_shape.py), read from the children's MutexValue ``_value`` without the
# lock: one attribute read is atomic under the GIL, and the lock guards no more than that.
_VALUE = attrgetter("_value")
_EXEMPLAR = attrgetter("_exemplar")


def _counter(c: Any) -> tuple[float, ...]:
    return (c._value._value, c._created)


def _gauge(c: Any) -> tuple[float, ...]:
    return (c._value._value,)


def _histogram(c: Any) -> tuple[float, ...]:
    return (*map(_VALUE, c._buckets), c._sum._value, c._created)


def _counter_exemplars(c: Any) -> tuple[Any, ...]:
    return (c._value._exemplar,)


def _histogram_exemplars(c: Any) -> tuple[Any, ...]:
    return tuple(map(_EXEMPLAR, c._buckets))


def _none(c: Any) -> tuple[Any, ...]:
    return ()


# type -> (key, exemplars aligned with the first samples)
_READERS: dict[str, tuple[Callable[[Any], tuple[float, ...]],
                          Callable[[Any], tuple[Any, ...]]]] = {
    "counter": (_counter, _counter_exemplars),
    "gauge": (_gauge, _none),
    "histogram": (_histogram, _histogram_exemplars),
}


def supported(collector: object) -> bool:
    """True for a counter, gauge or histogram object of prometheus_client, in one process
    (multiprocess values live in files: the library reads them)."""
    return _values.ValueClass is _values.MutexValue \
        and isinstance(collector, MetricWrapperBase) \
        and getattr(collector, "_type", None) in _READERS


class _Series:
    """One label set: its line prefixes, and per format its last bytes and the key (with
    the exemplars, in OpenMetrics) they were rendered from."""

    __slots__ = ("late", "om", "om_key", "prefixes", "text", "text_key")

    def __init__(self, prefixes: list[str]) -> None:
        self.prefixes = prefixes
        self.text_key: Any = None
        self.om_key: Any = None
        self.text = self.late = self.om = b""


def _text(s: _Series, shape: Shape, key: tuple[float, ...]) -> None:
    p, v = s.prefixes, shape.texts(key)
    s.text = "".join([f"{p[i]}{v[i]}\n" for i in shape.main]).encode("utf-8")
    s.late = "".join([f"{p[i]}{v[i]}\n" for i in shape.grouped]).encode("utf-8") \
        if shape.grouped else b""
    s.text_key = key


class FamilyRender:
    """Renders one counter, gauge or histogram object; keeps its label sets' lines."""

    def __init__(self, wrapper: Any) -> None:
        if not supported(wrapper):
            raise Unsupported(f"{type(wrapper).__name__} is not rendered here")
        self.wrapper = wrapper
        self.metric = wrapper._get_metric()  # name, documentation, type, unit; no samples
        self.read, self.read_exemplars = _READERS[wrapper._type]
        self.series: dict[tuple[str, ...], _Series] = {}
        self.shape: Shape | None = None
        self._headers: dict[str, bytes] = {}

    def render(self, fmt: str, budget: SeriesBudget, out: list[bytes],
               only_new: bool = False, pause: Callable[[], bool] | None = None) -> None:
        """Append the family in ``fmt`` to ``out``; label sets that no longer fit ``budget``
        are left out. ``only_new``: render only the sets that have no kept lines yet (a
        pre-render: ``out`` then holds only those), calling ``pause`` (if given) after every
        :data:`PAUSE_EVERY` of them: True stops the pre-render there (:class:`Paused`), the
        sets rendered so far kept.

        Raises :class:`Unsupported` (part of it may be in ``out``) when a label set does not
        match the reader; UnicodeEncodeError when a label value cannot be encoded.
        """
        w = self.wrapper
        if w._is_parent():
            with w._lock:
                children = list(w._metrics.items())
        else:
            children = [((), w)]
        shape = self.shape
        if shape is not None and shape.created != _metrics._use_created:
            shape = self.shape = None  # _created switched on or off: other lines
            self.series = {}
        text, read, read_ex = fmt == TEXT, self.read, self.read_exemplars
        series: dict[tuple[str, ...], _Series] = self.series
        kept: dict[tuple[str, ...], _Series] = {}
        out.append(self._header(fmt))
        grouped: list[bytes] = []
        fresh = 0
        for labels, child in children:
            if shape is None:
                shape = self.shape = self._shape(child)
            n = shape.n
            if n > budget.left:
                budget.left_out += n
                continue
            budget.left -= n
            s = series.get(labels)
            if s is None:
                if pause is not None:
                    fresh += 1
                    if fresh % PAUSE_EVERY == 0 and pause():
                        series.update(kept)  # the sets not visited yet stay as they were
                        raise Paused
                s = _Series(shape.prefixes(labels))
                long_lived.made(1, sets=False)  # kept as long as its label set: until exit
            elif only_new:
                kept[labels] = s
                continue
            kept[labels] = s
            if text:
                key = read(child)
                if key != s.text_key or not shape.kept:
                    _text(s, shape, key)
                out.append(s.text)
                if s.late:
                    grouped.append(s.late)
            else:
                both = (read(child), read_ex(child))
                if both != s.om_key or not shape.kept:
                    s.om = "".join([f"{p}{v}\n" for p, v in
                                    zip(s.prefixes, shape.texts(*both), strict=True)]) \
                        .encode("utf-8")
                    s.om_key = both
                out.append(s.om)
        self.series = kept  # label sets removed from the object are forgotten
        if grouped:
            out.append(self._header("grouped"))
            out.extend(grouped)

    def _shape(self, child: Any) -> Shape:
        shape = Shape(self.metric.name, self.wrapper._labelnames, child)
        if len(shape.values(self.read(child))) != shape.n:
            raise Unsupported(f"{self.metric.name}: {shape.n} samples, the reader has others")
        return shape

    def _header(self, fmt: str) -> bytes:
        head = self._headers.get(fmt)
        if head is None:
            head = self._headers[fmt] = self._header_text(fmt).encode("utf-8")
        return head

    def _header_text(self, fmt: str) -> str:
        m = self.metric
        doc = m.documentation
        text_doc = doc.replace("\\", r"\\").replace("\n", r"\n")
        if fmt == TEXT:
            name = om.escape_metric_name(m.name + "_total" if m.type == "counter" else m.name)
            return f"# HELP {name} {text_doc}\n# TYPE {name} {m.type}\n"
        if fmt == "grouped":  # the text format's _created gauge (counter, histogram)
            name = om.escape_metric_name(m.name + "_created")
            return f"# HELP {name} {text_doc}\n# TYPE {name} gauge\n"
        name = om.escape_metric_name(m.name)
        head = (f"# HELP {name} {om._escape(doc, om.ALLOWUTF8, om._is_legacy_labelname_rune)}\n"
                f"# TYPE {name} {m.type}\n")
        return head + f"# UNIT {name} {m.unit}\n" if m.unit else head
