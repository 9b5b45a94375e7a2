"""agents/waiting.py: the FIFO of calls waiting for their trace's agent span."""

from __future__ import annotations

import gc

from llm_observe.agents.waiting import Waiting


def test_items_come_back_in_order_and_the_oldest_traces_go_first() -> None:
    w = Waiting(limit=4)
    w.add("t1", ("a", "p"))
    w.add("t2", ("b", "p"))
    w.add("t1", ("c", "p"))
    assert w.n == 3
    w.add("t3", ("d", "p"))
    w.add("t4", ("e", "p"))  # 5 > 4: t1 (two items) goes whole
    assert w.n == 3
    assert w.pop("t1") == []
    assert w.pop("t2") == [("b", "p")]
    assert w.pop("t2") == [] and w.n == 2
    w.add("t3", ("f", "p"))
    assert w.pop("t3") == [("d", "p"), ("f", "p")] and w.n == 1


def test_a_full_fifo_of_one_call_a_trace_adds_nothing_for_the_gc_to_rescan() -> None:
    gc.collect()
    before = len(gc.get_objects())
    w = Waiting(limit=50_000)
    for i in range(60_000):  # a plain app: every call under its own request's span
        w.add(f"{i:032x}", (f"{i:016x}", f"{i + 1:016x}", i, i + 5, 7))
    gc.collect()
    assert w.n == 50_000
    assert len(gc.get_objects()) - before < 1_000  # not one tracked list a trace
