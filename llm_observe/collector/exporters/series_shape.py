"""The line prefixes and value texts of one metric object's label sets (``series_render.py``).

Every label set of a counter, gauge or histogram object has the same samples (suffixes,
``le`` bounds) and label names, so :class:`Shape` works out once, per line, the text
before and after a set's own labels; a new set's line prefixes are then that head and tail
joined by the set's label text (one ``str.join`` per line, in ``map``: a third of the cost
of a ``str.format`` template per line), and values come from a float-to-text memo read in
a ``map``. A sample label that sorts between two of the set's own (``le`` between ``a``
and ``z``) splits them: that object's prefixes come from ``str.format`` templates.

The text is prometheus_client 0.26's: its escaping helpers, ``floatToGoString``, and the
layout of a child's ``_child_samples`` (cumulative buckets, ``_count``, ``_sum`` when the
first bound is >= 0, ``_created`` when switched on). A *key* is a set's raw values as
``series_render`` reads them: a counter's value and ``_created``, a gauge's value, a
histogram's per-bucket counts, ``_sum`` and ``_created``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any, cast

from prometheus_client import metrics as _metrics
from prometheus_client.openmetrics import exposition as om
from prometheus_client.utils import floatToGoString as _untyped_float

floatToGoString = cast(Callable[[float], str], _untyped_float)

__all__ = ["Shape", "exemplar_text", "go_float"]

_OM_GROUPED = ("_created", "_gsum", "_gcount")  # text format: moved into a gauge after the family
MEMO_MAX = 1 << 16
_MEMO: dict[float, str] = {}
_ESCAPED: dict[str, str] = {}


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


def _escape(v: str) -> str:
    """A label value escaped (the same in both formats: label values always allow UTF-8),
    remembered: a model or service name recurs in many label sets."""
    e = _ESCAPED.get(v)
    if e is None:
        e = om._escape(v, om.ALLOWUTF8, om._is_legacy_labelname_rune)
        if len(_ESCAPED) >= MEMO_MAX:
            _ESCAPED.clear()
        _ESCAPED[v] = e
    return e


def _through(memo: dict[Any, str], make: Callable[[Any], str], items: Sequence[Any]) -> list[str]:
    try:  # a C loop: the usual case, every item seen before
        return list(map(memo.__getitem__, items))
    except KeyError:
        return list(map(make, items))


def _brace(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def exemplar_text(exemplar: Any) -> str:
    """`` # {labels} value [timestamp]`` as prometheus_client's OpenMetrics writer puts it."""
    labels = ",".join(['{}="{}"'.format(k, v.replace("\\", r"\\").replace("\n", r"\n")
                                        .replace('"', r"\""))
                       for k, v in sorted(exemplar.labels.items())])
    if exemplar.timestamp is not None:
        return f" # {{{labels}}} {floatToGoString(exemplar.value)} {exemplar.timestamp}"
    return f" # {{{labels}}} {floatToGoString(exemplar.value)}"


class Shape:
    """What one object's label sets share, for the ``_created`` setting it was made under.

    ``n``: lines per set; ``main``/``grouped``: the text format's lines in the family and in
    its trailing ``_created`` gauge; ``kept``: whether a set's bytes may be kept while its
    key is equal (not for gauges: ``0.0 == -0.0``).
    """

    __slots__ = ("created", "grouped", "heads", "kept", "label_fmt", "main", "n", "templates",
                 "values")

    def __init__(self, name: str, labelnames: Sequence[str], child: Any) -> None:
        self.created = _metrics._use_created
        self.kept = child._type != "gauge"
        samples = list(child._child_samples())
        self.n = len(samples)
        self.label_fmt = ",".join(f'{_brace(om.escape_label_name(k))}="{{{labelnames.index(k)}}}"'
                                  for k in sorted(labelnames))
        self.heads: list[tuple[str, str]] | None = []
        self.templates: list[str] = []
        self.main: list[int] = []
        self.grouped: list[int] = []
        for i, s in enumerate(samples):
            names = sorted({*labelnames, *s.labels})
            pairs = [f'{om.escape_label_name(k)}="{_escape(s.labels[k])}"' if k in s.labels
                     else None for k in names]
            own = [j for j, p in enumerate(pairs) if p is None]
            full = om.escape_metric_name(name + s.name)
            head: tuple[str, str] | None = None
            if not own:
                head = (full + "{" + ",".join(cast(list[str], pairs)), "} ") if names \
                    else (full, " ")
            elif own[-1] - own[0] == len(own) - 1:  # the set's own labels are one run
                head = (full + "{" + "".join(f"{p}," for p in pairs[:own[0]]),
                        "".join(f",{p}" for p in pairs[own[-1] + 1:]) + "} ")
            if head is None or self.heads is None:
                self.heads = None
            else:
                self.heads.append(head)
            fields = [_brace(p) if p is not None
                      else f'{_brace(om.escape_label_name(k))}="{{{labelnames.index(k)}}}"'
                      for k, p in zip(names, pairs, strict=True)]
            full = _brace(full)
            self.templates.append(f"{full}{{{{{','.join(fields)}}}}} " if fields else f"{full} ")
            (self.grouped if s.name in _OM_GROUPED else self.main).append(i)
        self.values: Callable[[tuple[float, ...]], Sequence[float]] = \
            self._histogram_values(child) if child._type == "histogram" else self._one_value

    def prefixes(self, labels: tuple[str, ...]) -> list[str]:
        """A label set's line prefixes (``name{labels} ``), from its label values."""
        escaped = _through(_ESCAPED, _escape, labels)
        if self.heads is not None:
            return list(map(self.label_fmt.format(*escaped).join, self.heads))
        return [t.format(*escaped) for t in self.templates]

    def texts(self, key: tuple[float, ...], exemplars: tuple[Any, ...] = ()) -> list[str]:
        """A set's sample values as text; ``exemplars`` (OpenMetrics) align with the first."""
        values = self.values(key)
        texts = _through(_MEMO, go_float, values) if self.kept \
            else list(map(floatToGoString, values))
        if any(exemplars):
            for i, ex in enumerate(exemplars):
                if ex:
                    texts[i] += exemplar_text(ex)
        return texts

    def _one_value(self, key: tuple[float, ...]) -> Sequence[float]:
        # a counter's key is (value, _created); a gauge's (value,)
        return key if self.created or len(key) == 1 else key[:1]

    def _histogram_values(self, child: Any) -> Callable[[tuple[float, ...]], Sequence[float]]:
        nb, with_sum = len(child._upper_bounds), child._upper_bounds[0] >= 0

        def values(key: tuple[float, ...]) -> Sequence[float]:
            # cumulative, added in the library's order from 0.0: the same floats
            out = list(accumulate(key[:nb], initial=0.0))
            del out[0]
            out.append(out[-1])  # _count
            if with_sum:
                out.append(key[nb])
            if self.created:
                out.append(key[nb + 1])
            return out
        return values
