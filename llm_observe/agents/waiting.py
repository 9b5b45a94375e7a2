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
from typing import Any

Item = tuple[Any, ...]


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

    def pop(self, trace: str) -> list[Item]:
        """The trace's items in arrival order (none if it has none), no longer held."""
        items = _items(self._fifo.pop(trace, None))
        self.n -= len(items)
        return items


def _items(held: Item | list[Item] | None) -> list[Item]:
    if held is None:
        return []
    return held if type(held) is list else [held]  # type: ignore[list-item]
