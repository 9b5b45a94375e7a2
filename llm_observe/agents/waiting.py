"""The FIFO of calls and chain links waiting for their trace's first agent, tool or
workflow span (:class:`agents.runs.RunTracker`).

A plain LLM app's calls (one a trace, under a web request's span) only pass through it, so
in steady state it is full. A trace's one item is therefore kept bare, a list only from its
second: 200,000 waiting lists would be rescanned by every full collection of the cyclic GC
(~44 ms each, one every ~50,000 calls), while a tuple of strings and ints leaves the GC's
lists at its first collection (19 ms with bare items; ``RunTracker.add`` 2.8 → 1.2 µs a
call with the FIFO full, same process, CPython's GC thresholds).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from operator import itemgetter
from typing import Any

Item = tuple[Any, ...]
_TRACE, _PARENT = itemgetter(0), itemgetter(2)  # of a call or link tuple (trace first)


class Waiting:
    """Items by trace, oldest trace first; past ``limit`` items the oldest traces go whole."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.n = 0
        self._fifo: OrderedDict[str, Item | list[Item]] = OrderedDict()

    def add(self, trace: str, item: Item) -> None:
        fifo = self._fifo
        held = fifo.get(trace)
        if held is None:
            fifo[trace] = item
        elif type(held) is list:
            held.append(item)
        else:
            fifo[trace] = [held, item]  # type: ignore[list-item]
        self.n += 1
        while self.n > self.limit:
            self.n -= len(_items(fifo.popitem(last=False)[1]))

    def take_all(self, held: Mapping[str, Any], calls: list[Item], links: list[Item]
                 ) -> bool:
        """``RunTracker.add``'s case of a plain app's request: when every call has a parent
        and no call's or link's trace is in ``held`` (a dict of the traces held), add them
        all (calls, then links, each whole: ``RunTracker._trace`` reads them back) and
        return True; else add nothing and return False."""
        if not all(map(_PARENT, calls)) or not held.keys().isdisjoint(map(_TRACE, calls)) \
                or not held.keys().isdisjoint(map(_TRACE, links)):
            return False
        items = [*calls, *links]
        self.extend(list(map(_TRACE, items)), items)
        return True

    def extend(self, traces: list[str], items: list[Item]) -> None:
        """:meth:`add` of each ``(traces[i], items[i])`` in order. Traces new to the FIFO
        and to each other (a plain app's calls: one a trace) go in by one C-level
        ``update``, then the oldest traces past ``limit`` go: the same FIFO as one
        :meth:`add` each, whose evictions also take the oldest traces only."""
        fifo = self._fifo
        if len(set(traces)) != len(traces) or not fifo.keys().isdisjoint(traces):
            for trace, item in zip(traces, items, strict=True):
                self.add(trace, item)
            return
        fifo.update(zip(traces, items, strict=True))
        self.n += len(items)
        while self.n > self.limit:
            self.n -= len(_items(fifo.popitem(last=False)[1]))

    def pop(self, trace: str) -> list[Item]:
        """The trace's items in arrival order (none if it has none), no longer held."""
        items = _items(self._fifo.pop(trace, None))
        self.n -= len(items)
        return items


def _items(held: Item | list[Item] | None) -> list[Item]:
    if held is None:
        return []
    return held if type(held) is list else [held]  # type: ignore[list-item]
