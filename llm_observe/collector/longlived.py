"""Objects made to live as long as the process leave the cyclic GC's generations.

The label sets of the metric families are kept until exit (a label set is never removed;
the budgets bound them), and each is ~200 GC-tracked objects: children, bucket values,
and the exposition's kept lines for it. CPython runs a full collection each time its
oldest generation has grown by a quarter, so while a client fills the label-set budget
the full collections come again and again, each scanning every label set made so far with
the GIL held: 100-380 ms each at ~270,000 series (``bench.hostile``'s cardinality case),
during which no door answers, not even the health probe. ``serve`` freezes its start-up
heap (``gc.freeze``); :data:`long_lived` does the same for what was made since, once
:data:`EVERY` more long-lived objects were reported by :meth:`LongLived.made`.

Where the freeze runs: ``gc.freeze()`` is constant time, but cyclic garbage in the GC's
generations at that moment is never collected, so the young generations' garbage should be
collected first. That collection scans every young object (new label sets, requests in
flight): collecting gens 0 and 1 on the loop after a record batch held the loop 5-30 ms,
over and over while the budget filled (``bench.hostile --trace``: collections logged). So
:meth:`LongLived.settle` on the loop only *arms* the freeze, and it runs at the end of the
interpreter's next collection (a ``gc.callbacks`` hook), which collects the youngest
generation anyway: no collection of our own. What the freeze keeps: garbage in gen 1 then
(cycles that survived a young collection and died since) and, for the freeze at the end of
a render (``young_first=False``: the render's new objects are young and would all be
scanned), the cycles the loop made during that render. The label-set budgets bound the
number of freezes (one per :data:`EVERY` children at most: ~80 at the default budgets), so
that loss is bounded. Objects frozen while in use (a batch in flight) are still freed by
reference counting.

Off until :meth:`LongLived.enable` (``serve`` does it after its start-up freeze): a library
user or a test process keeps CPython's default behaviour. Counting is not locked (the loop
and the scrape thread report): a lost increment only moves a freeze a little.
"""

from __future__ import annotations

import gc

EVERY = 1024  # long-lived metric children (or their kept renders) between two freezes


class LongLived:
    """Freezes the heap once ``every`` more long-lived objects were made (when enabled)."""

    def __init__(self, every: int = EVERY) -> None:
        self.every = every
        self.enabled = False
        self.pending = 0
        self.freezes = 0
        self.made_sets = 0  # times new label sets were made: the scrape pre-renders them
        self.armed = False  # freeze at the end of the next collection

    def enable(self) -> None:
        """Start freezing; what was made so far counts as frozen (``serve`` froze it)."""
        self.enabled = True
        self.pending = 0
        if self._collected not in gc.callbacks:
            gc.callbacks.append(self._collected)

    def disable(self) -> None:
        """Stop freezing (a test's process gets CPython's behaviour back)."""
        self.enabled = self.armed = False
        self.pending = 0
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)

    def made(self, n: int, *, sets: bool = True) -> None:
        """``n`` more objects that live until exit: a new label set's metric children, or
        (``sets=False``) the exposition's kept render of one."""
        self.pending += n
        if sets:
            self.made_sets += 1

    def settle(self, young_first: bool = True) -> bool:
        """Freeze if ``every`` were made since the last freeze; True if it froze now.
        ``young_first``: not now but at the end of the interpreter's next collection (which
        collects the youngest generation's garbage first), so the caller does not pay for a
        collection; False: now, and an armed freeze too (the render's end, the GC paused:
        left armed, the first collection after the render scanned all its young objects,
        35-54 ms on the scrape thread)."""
        if not self.enabled:
            return False
        if self.pending >= self.every:
            self.pending = 0
            self.armed = True
        if not self.armed or young_first:
            return False
        self._freeze()
        return True

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        """``gc.callbacks`` hook: the armed freeze, once a collection ended (any thread;
        the GIL is held, the generations consistent)."""
        if phase == "stop" and self.armed and self.enabled:
            self._freeze()

    def _freeze(self) -> None:
        self.armed = False
        gc.freeze()
        self.freezes += 1


long_lived = LongLived()  # the process's: enabled by ``serve``
