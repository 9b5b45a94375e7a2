"""UnpricedTracker: counts per (model, provider), bounded memory, thread safety."""

from __future__ import annotations

import threading

from llm_observe.pricing import UnpricedTracker
from llm_observe.pricing.unpriced import MAX_NAME_CHARS


def test_counts_most_frequent_first() -> None:
    t = UnpricedTracker()
    assert t.record("a", "p") is True
    assert t.record("a", "p") is False
    t.record("b", "p")
    t.record("b", "p")
    t.record("b", "p")
    snap = t.snapshot()
    assert snap["models"] == [{"model": "b", "provider": "p", "count": 3},
                              {"model": "a", "provider": "p", "count": 2}]
    assert (snap["distinct_models"], snap["total_spans"], snap["overflow_spans"]) == (2, 5, 0)


def test_distinct_names_are_capped_and_the_rest_counted_as_overflow() -> None:
    t = UnpricedTracker(max_names=3)
    for i in range(10):
        t.record(f"junk-{i}", "p")
    t.record("junk-0", "p")  # a kept name still counts
    t.record("junk-9", "p")  # an overflow name counts as overflow again
    snap = t.snapshot()
    assert snap["distinct_models"] == 3 and len(snap["models"]) == 3
    assert snap["overflow_spans"] == 8 and snap["overflow_models_at_least"] == 3
    assert snap["total_spans"] == 12


def test_huge_names_are_cut() -> None:
    t = UnpricedTracker()
    t.record("m" * 1_000_000, "p" * 10_000)
    (row,) = t.snapshot()["models"]
    assert len(row["model"]) == len(row["provider"]) == MAX_NAME_CHARS


def test_concurrent_writers_lose_no_count() -> None:
    t = UnpricedTracker(max_names=50)

    def work(k: int) -> None:
        for i in range(2_000):
            t.record(f"m{(i + k) % 80}", "p")
            if i % 500 == 0:
                t.snapshot()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert t.snapshot()["total_spans"] == 8_000
