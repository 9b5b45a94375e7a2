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

Cost: ``gc.freeze()`` is constant time. Cyclic garbage that is in the GC's generations at
that moment is never collected: a freeze on the event loop collects the young generations
first (a few ms); one at the end of a render does not (the render's new objects are young
and would all be scanned), so the cycles the loop made during that render are kept. The
label-set budgets bound the number of freezes (one per :data:`EVERY` children at most:
~80 at the default budgets), so that loss is bounded. Objects frozen while in use (a batch
in flight) are still freed by reference counting.

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

    def enable(self) -> None:
        """Start freezing; what was made so far counts as frozen (``serve`` froze it)."""
        self.enabled = True
        self.pending = 0

    def made(self, n: int, *, sets: bool = True) -> None:
        """``n`` more objects that live until exit: a new label set's metric children, or
        (``sets=False``) the exposition's kept render of one."""
        self.pending += n
        if sets:
            self.made_sets += 1

    def settle(self, young_first: bool = True) -> bool:
        """Freeze if ``every`` were made since the last freeze; True if it froze.
        ``young_first``: collect gens 0 and 1 first, so their garbage is not frozen."""
        if not self.enabled or self.pending < self.every:
            return False
        self.pending = 0
        if young_first:
            gc.collect(1)
        gc.freeze()
        self.freezes += 1
        return True


long_lived = LongLived()  # the process's: enabled by ``serve``
