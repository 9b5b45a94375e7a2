"""One metric object's exposition, re-rendering only the label sets that changed.

Why: ``generate_latest`` rebuilds every sample of every label set on every scrape (a
``Sample`` tuple, a merged and sorted label dict, an escaped label string per line). At the
full label-set budget that is ~280,000 lines and 4.5-6.5 s a scrape, past the spec's 5 s
scrape interval. :class:`FamilyRender` builds a label set's line prefixes once, reads its
values straight from the child (no ``Sample``), and keeps the set's rendered bytes until a
value (or, in OpenMetrics, an exemplar) changes; an unchanged set costs a tuple compare.

Output is byte for byte what prometheus_client 0.26 renders for the same object in both
formats (``tests/collector/test_series_render.py`` compares them with a fresh full render),
so this reads its internals: a wrapper's ``_metrics``/``_lock``/``_labelnames``, the
children's ``_value``/``_buckets``/``_sum``/``_created``/``_upper_bounds``, and the
exposition's escaping helpers. Anything else (a summary, an info, a custom collector, a
child whose samples do not match the reader) raises :class:`Unsupported` and the caller
renders that object the library's way. Counter, gauge and histogram objects only.

Not thread-safe: one :class:`FamilyRender` is used by one render at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any, cast

from prometheus_client import metrics as _metrics
from prometheus_client import values as _values
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.openmetrics import exposition as om
from prometheus_client.utils import floatToGoString as _untyped_float

from llm_observe.collector.longlived import long_lived

floatToGoString = cast(Callable[[float], str], _untyped_float)

__all__ = ["OPENMETRICS", "TEXT", "FamilyRender", "SeriesBudget", "Unsupported", "supported"]

TEXT = "text"  # Prometheus text format 0.0.4
OPENMETRICS = "openmetrics"  # OpenMetrics 1.0.0 (with exemplars)
_OM_GROUPED = ("_created", "_gsum", "_gcount")  # text format: moved into a gauge after the family


class Unsupported(Exception):
    """This object is not one the fast path renders exactly; render it the library's way."""


class SeriesBudget:
    """Sample lines a scrape may still render; label sets past it are left out, counted."""

    __slots__ = ("left", "left_out")

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.left_out = 0


# Values are read from the children's MutexValue ``_value`` without its lock: one attribute
# read is atomic under the GIL, and the lock guards no more than that (a batch's updates are
# many locked increments either way), at a third of the cost.
def _counter(c: Any) -> tuple[float, ...]:
    return (c._value._value, c._created) if _metrics._use_created else (c._value._value,)


def _gauge(c: Any) -> tuple[float, ...]:
    return (c._value._value,)


def _histogram(c: Any) -> tuple[float, ...]:
    # cumulative, added in the library's order from 0.0: the same floats as _child_samples
    out = list(accumulate([b._value for b in c._buckets], initial=0.0))
    del out[0]
    out.append(out[-1])  # _count
    if c._upper_bounds[0] >= 0:
        out.append(c._sum._value)
    if _metrics._use_created:
        out.append(c._created)
    return tuple(out)


_MEMO: dict[float, str] = {}
MEMO_MAX = 1 << 16


def go_float(v: float) -> str:
    """``floatToGoString(v)``, remembered: counts repeat across label sets and scrapes.

    Not for gauges: ``0.0 == -0.0`` share a key, and only a gauge can hold ``-0.0``
    (counters and histograms start at 0.0 and only add non-negative amounts).
    """
    s = _MEMO.get(v)
    if s is None:
        s = floatToGoString(v)
        if len(_MEMO) >= MEMO_MAX:
            _MEMO.clear()
        _MEMO[v] = s
    return s


def _counter_exemplars(c: Any) -> tuple[Any, ...]:
    return (c._value._exemplar,)


def _histogram_exemplars(c: Any) -> tuple[Any, ...]:
    return tuple([b._exemplar for b in c._buckets])


_Reader = Callable[[Any], tuple[float, ...]]
# type -> (values, exemplars aligned with the first samples, value formatter)
_READERS: dict[str, tuple[_Reader, Callable[[Any], tuple[Any, ...]] | None,
                          Callable[[float], str]]] = {
    "counter": (_counter, _counter_exemplars, go_float),
    "gauge": (_gauge, None, floatToGoString),  # rendered every scrape: 0.0 == -0.0 too
    "histogram": (_histogram, _histogram_exemplars, go_float),
}


def supported(collector: object) -> bool:
    """True for a counter, gauge or histogram object of prometheus_client, in one process
    (multiprocess values live in files: the library reads them)."""
    return _values.ValueClass is _values.MutexValue \
        and isinstance(collector, MetricWrapperBase) \
        and getattr(collector, "_type", None) in _READERS


def _brace(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _value(v: str) -> str:
    # the same in both formats (label values always allow UTF-8)
    return om._escape(v, om.ALLOWUTF8, om._is_legacy_labelname_rune)


class _Shape:
    """The line prefixes of one object's label sets, as ``str.format`` templates.

    Every label set of an object has the same samples (suffixes, ``le`` bounds) and label
    names, so the sorted label order is computed once; a label set fills in its values.
    The text format and OpenMetrics write the same prefix; the text format moves the
    ``_created`` lines into a gauge family after the object's other lines.
    """

    __slots__ = ("fmt_value", "grouped", "kept", "main", "n", "templates")

    def __init__(self, name: str, labelnames: Sequence[str], child: Any,
                 fmt_value: Callable[[float], str]) -> None:
        self.fmt_value = fmt_value
        self.kept = fmt_value is go_float  # may a label set's bytes be kept while equal?
        samples = list(child._child_samples())
        self.n = len(samples)
        self.templates: list[str] = []
        self.main: list[int] = []
        self.grouped: list[int] = []
        for i, s in enumerate(samples):
            pairs = []
            for k in sorted({*labelnames, *s.labels}):
                value = _brace(_value(s.labels[k])) if k in s.labels \
                    else f"{{{labelnames.index(k)}}}"
                pairs.append(f'{_brace(om.escape_label_name(k))}="{value}"')
            full = _brace(om.escape_metric_name(name + s.name))
            self.templates.append(f"{full}{{{{{','.join(pairs)}}}}} " if pairs else f"{full} ")
            (self.grouped if s.name in _OM_GROUPED else self.main).append(i)


def exemplar_text(exemplar: Any) -> str:
    """`` # {labels} value [timestamp]`` as prometheus_client's OpenMetrics writer puts it."""
    labels = ",".join(['{}="{}"'.format(k, v.replace("\\", r"\\").replace("\n", r"\n")
                                        .replace('"', r"\""))
                       for k, v in sorted(exemplar.labels.items())])
    if exemplar.timestamp is not None:
        return f" # {{{labels}}} {floatToGoString(exemplar.value)} {exemplar.timestamp}"
    return f" # {{{labels}}} {floatToGoString(exemplar.value)}"


class _Series:
    """One label set: its line prefixes and its last rendered bytes per format."""

    __slots__ = ("om_chunk", "om_key", "prefixes", "shape", "text_chunk", "text_grouped",
                 "values")

    def __init__(self, shape: _Shape, key: tuple[str, ...]) -> None:
        values = [_value(v) for v in key]
        self.shape = shape
        self.prefixes = [t.format(*values) for t in shape.templates]
        self.values: tuple[float, ...] | None = None
        self.text_chunk = self.text_grouped = b""
        self.om_key: Any = None
        self.om_chunk = b""

    def text(self, values: tuple[float, ...]) -> tuple[bytes, bytes]:
        if values != self.values or not self.shape.kept:
            p, shape = self.prefixes, self.shape
            f = shape.fmt_value
            self.text_chunk = "".join([f"{p[i]}{f(values[i])}\n" for i in shape.main]) \
                .encode("utf-8")
            self.text_grouped = "".join([f"{p[i]}{f(values[i])}\n" for i in shape.grouped]) \
                .encode("utf-8") if shape.grouped else b""
            self.values = values
        return self.text_chunk, self.text_grouped

    def openmetrics(self, values: tuple[float, ...], exemplars: tuple[Any, ...]) -> bytes:
        key = (values, exemplars)
        if key != self.om_key or not self.shape.kept:
            f = self.shape.fmt_value
            lines = []
            for i, p in enumerate(self.prefixes):
                ex = exemplars[i] if i < len(exemplars) else None
                lines.append(f"{p}{f(values[i])}{exemplar_text(ex) if ex else ''}\n")
            self.om_chunk = "".join(lines).encode("utf-8")
            self.om_key = key
        return self.om_chunk


class FamilyRender:
    """Renders one counter, gauge or histogram object; keeps its label sets' lines."""

    def __init__(self, wrapper: Any) -> None:
        if not supported(wrapper):
            raise Unsupported(f"{type(wrapper).__name__} is not rendered here")
        self.wrapper = wrapper
        self.metric = wrapper._get_metric()  # name, documentation, type, unit; no samples
        self.read, self.read_exemplars, fmt_value = _READERS[wrapper._type]
        self.fmt_value = fmt_value
        self.series: dict[tuple[str, ...], _Series] = {}
        self.shape: _Shape | None = None
        self._headers: dict[str, bytes] = {}

    def render(self, fmt: str, budget: SeriesBudget) -> bytes:
        """The family in ``fmt``; label sets that no longer fit ``budget`` are left out.

        Raises :class:`Unsupported` (nothing of it rendered) when a label set does not
        match the reader; UnicodeEncodeError when a label value cannot be encoded.
        """
        w = self.wrapper
        if w._is_parent():
            with w._lock:
                children = list(w._metrics.items())
        else:
            children = [((), w)]
        read, read_ex = self.read, self.read_exemplars
        series, kept = self.series, {}
        main: list[bytes] = [self._header(fmt)]
        grouped: list[bytes] = []
        for key, child in children:
            values = read(child)
            n = len(values)
            if n > budget.left:
                budget.left_out += n
                continue
            budget.left -= n
            s = series.get(key)
            if s is None or s.shape.n != n:  # new, or _created switched on or off
                shape = self.shape
                if shape is None or shape.n != n:
                    shape = self.shape = _Shape(self.metric.name, w._labelnames, child,
                                                self.fmt_value)
                    if shape.n != n:
                        raise Unsupported(f"{self.metric.name}: {shape.n} samples, the "
                                          f"reader has {n}")
                s = _Series(shape, key)
                long_lived.made(1)  # kept as long as its label set: until exit
            kept[key] = s
            if fmt == TEXT:
                chunk, late = s.text(values)
                main.append(chunk)
                if late:
                    grouped.append(late)
            else:
                main.append(s.openmetrics(values, read_ex(child) if read_ex else ()))
        self.series = kept  # label sets removed from the object are forgotten
        if grouped:
            main.append(self._header("grouped"))
            main.extend(grouped)
        return b"".join(main)

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
