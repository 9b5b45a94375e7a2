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


def test_a_request_added_whole_leaves_the_fifo_one_add_an_item_leaves() -> None:
    import random

    r = random.Random(7)
    for _ in range(200):
        one, whole = Waiting(limit=r.choice([1, 3, 10])), Waiting(limit=0)
        whole.limit = one.limit
        for _ in range(r.randint(1, 6)):  # requests: new traces, repeats, traces seen before
            traces = [f"t{r.randint(0, 12)}" for _ in range(r.randint(0, 6))]
            items = [(t, f"s{i}", "p", i) for i, t in enumerate(traces)]
            for t, item in zip(traces, items, strict=True):
                one.add(t, item)
            whole.extend(traces, items)
            assert whole.n == one.n
            assert list(whole._fifo.items()) == list(one._fifo.items())


def test_take_all_refuses_a_request_with_a_held_trace_or_a_root_call() -> None:
    w = Waiting(limit=10)
    call = ("t1", "s1", "p1", 0, 1, 2)
    assert not w.take_all({"t1": object()}, [call], [])
    assert not w.take_all({}, [("t2", "s2", "", 0, 1, 2)], [])  # a root call is in no run
    assert not w.take_all({"t3": object()}, [], [("t3", "s3", "p3")])
    assert w.n == 0
    assert w.take_all({"t9": object()}, [call], [("t2", "s3", "p3")])
    assert w.pop("t1") == [call] and w.pop("t2") == [("t2", "s3", "p3")]
