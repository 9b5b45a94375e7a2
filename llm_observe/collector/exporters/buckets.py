"""Histogram observations added a batch at a time: one update per touched bucket.

Measured reason (``bench.processors``, ``metric_updates_batched_vs_public_observe``):
prometheus_client's public ``observe()`` takes a lock and a bisect per value. Here a batch's
values are bucketed with ``map(bisect_left)`` counted by ``Counter`` (both in C), then each
touched bucket and the sum get one ``inc``. The one place that writes prometheus_client's
internals: a child's non-cumulative per-bucket counts in ``_buckets`` aligned with
``_upper_bounds`` (every release since 0.4); a client without that layout, or
``batched=False``, gets plain ``observe`` calls.

:class:`SharedBounds` buckets one list of values for two histograms with one bisect per
value (the spec's ``llm_latency_ms_total`` and the GenAI operation duration observe the
same latencies with different bounds).

Counting goes through ``collections._count_elements`` (the C helper ``Counter.update`` calls)
into a plain dict: ``Counter(...)`` adds ~2 µs of Python set-up per call, paid per label set
and histogram each batch. ``narrow=True`` (the token histograms, whose bounds are 4x apart, so
one label set's counts usually share a bucket) checks ``min`` and ``max`` first and skips the
per-value bucketing when both fall in one bucket.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

try:
    from collections import _count_elements  # type: ignore[attr-defined]
except ImportError:  # not CPython: the same counting in Python
    def _count_elements(mapping: dict[Any, int], iterable: Any) -> None:
        for item in iterable:
            mapping[item] = mapping.get(item, 0) + 1

__all__ = ["SharedBounds", "observe_batch", "observe_shared"]


def _batchable(child: Any, bounds: Sequence[float] | None) -> bool:
    buckets = getattr(child, "_buckets", None)
    own = getattr(child, "_upper_bounds", None)
    return buckets is not None and own is not None and len(buckets) == len(own) \
        and (bounds is None or len(bounds) == len(own))


def _add(child: Any, counts: Mapping[int, int], total: float) -> None:
    child._sum.inc(total)
    buckets = child._buckets
    for i, n in counts.items():
        buckets[i].inc(n)


def _bucket_counts(bounds: Sequence[float], values: Sequence[float]) -> dict[int, int]:
    counts: dict[int, int] = {}
    # first bound >= value: observe()'s "amount <= bound"
    _count_elements(counts, map(bisect_left, repeat(bounds), values))
    return counts


def observe_batch(child: Any, values: Sequence[float], batched: bool = True,
                  bounds: Sequence[float] | None = None, divisor: int = 1,
                  narrow: bool = False) -> None:
    """Add ``v / divisor`` for each value to a histogram child.

    ``bounds``: the child's bucket bounds times ``divisor`` (default: the child's own);
    ``narrow``: try the one-bucket shortcut first (see the module's docstring).
    """
    if not values:
        return
    if not batched or not _batchable(child, bounds):
        for value in values:
            child.observe(value / divisor if divisor != 1 else value)
        return
    bounds = bounds or child._upper_bounds
    counts = None
    if narrow:
        lowest = bisect_left(bounds, min(values))
        if lowest == bisect_left(bounds, max(values)):
            counts = {lowest: len(values)}
    if counts is None:
        counts = _bucket_counts(bounds, values)
    total = sum(values)
    _add(child, counts, total / divisor if divisor != 1 else total)


class SharedBounds:
    """Two histograms' bounds (``a`` as is, ``b`` times ``divisor_b``) merged into one list.

    A value's first merged bound ``>=`` it maps to its bucket in each: the first ``a``
    bound ``>=`` the value is a merged bound, hence ``>=`` that first merged bound, and no
    ``a`` bound lies between the value and it.
    """

    __slots__ = ("a", "b", "divisor_b", "merged", "to_a", "to_b")

    def __init__(self, a: Sequence[float], b: Sequence[float], divisor_b: int) -> None:
        inf = float("inf")
        self.a = (*a, inf)
        self.b = (*(round(x * divisor_b) for x in b), inf)
        self.divisor_b = divisor_b
        self.merged = tuple(sorted(set(self.a) | set(self.b)))
        self.to_a = tuple(bisect_left(self.a, m) for m in self.merged)
        self.to_b = tuple(bisect_left(self.b, m) for m in self.merged)


def observe_shared(a: Any, b: Any, values: Sequence[float], shared: SharedBounds,
                   batched: bool = True) -> None:
    """Observe ``values`` on histogram child ``a`` and ``v / divisor_b`` on child ``b``."""
    if not values:
        return
    if not batched or not _batchable(a, shared.a) or not _batchable(b, shared.b):
        observe_batch(a, values, batched, shared.a)
        observe_batch(b, values, batched, shared.b, shared.divisor_b)
        return
    counts_a: dict[int, int] = {}
    counts_b: dict[int, int] = {}
    to_a, to_b = shared.to_a, shared.to_b
    for j, n in _bucket_counts(shared.merged, values).items():
        counts_a[to_a[j]] = counts_a.get(to_a[j], 0) + n
        counts_b[to_b[j]] = counts_b.get(to_b[j], 0) + n
    total = sum(values)
    _add(a, counts_a, total)
    _add(b, counts_b, total / shared.divisor_b)
