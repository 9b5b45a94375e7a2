"""collector/longlived.py: label sets made after start-up leave the cyclic GC's generations."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from llm_observe.collector.exporters.prometheus import LlmMetrics, PrometheusExporter
from llm_observe.collector.longlived import LongLived, long_lived
from llm_observe.span import LlmSpan


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    gc.collect()
    yield
    long_lived.disable()
    gc.unfreeze()  # the test process keeps CPython's behaviour


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def _cycle() -> int:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return id(a)


def _tracked(ident: int) -> bool:
    return any(id(o) == ident for o in gc.get_objects())


@pytest.fixture
def ll() -> Iterator[LongLived]:
    made = LongLived(every=10)
    yield made
    made.disable()


def test_off_until_enabled_then_freezes_every_n_made(ll: LongLived) -> None:
    ll.made(50)
    assert not ll.settle(young_first=False) and gc.get_freeze_count() == 0
    ll.enable()
    ll.made(9)
    assert not ll.settle(young_first=False)
    ll.made(1)
    assert ll.settle(young_first=False) and gc.get_freeze_count() > 0 and ll.freezes == 1
    assert not ll.settle(young_first=False)  # nothing new since


def test_the_loop_only_arms_the_freeze_the_next_collection_runs_it(ll: LongLived) -> None:
    """settle() on the event loop runs no collection of its own (one held the loop 5-30 ms
    after each record batch while the budget filled): the interpreter's next one freezes."""
    ll.enable()
    ll.made(10)
    frozen = gc.get_freeze_count()
    collections = sum(s["collections"] for s in gc.get_stats())
    assert not ll.settle()
    assert sum(s["collections"] for s in gc.get_stats()) == collections
    assert gc.get_freeze_count() == frozen and ll.freezes == 0
    gc.collect(0)  # what the interpreter runs every GEN0_THRESHOLD allocations
    assert gc.get_freeze_count() > frozen and ll.freezes == 1
    gc.collect(0)
    assert ll.freezes == 1  # once per settle


def test_a_render_end_runs_an_armed_freeze_at_once(ll: LongLived) -> None:
    """The render pauses the GC: the armed freeze waits for no collection after it (the
    first one would scan every young object the render made)."""
    ll.enable()
    ll.made(10)
    ll.settle()  # the loop: armed
    assert ll.settle(young_first=False) and ll.freezes == 1 and not ll.armed


def test_young_garbage_is_collected_first_not_frozen(ll: LongLived) -> None:
    ll.enable()
    gc.disable()
    try:
        ident = _cycle()  # unreachable, young
        ll.made(10)
        ll.settle()
        gc.collect(0)  # the next collection: then the freeze
        assert ll.freezes == 1
        assert not _tracked(ident)
        gc.unfreeze()
        gc.collect()
        assert not _tracked(ident)  # it was freed, not kept frozen
    finally:
        gc.enable()


def test_the_exporter_takes_new_label_sets_out_of_the_generations() -> None:
    """What a full collection scans stops growing with the label sets a client makes."""
    long_lived.enable()
    exporter = PrometheusExporter(LlmMetrics(CollectorRegistry()))

    def batch(k: int) -> list[LlmSpan]:
        return [LlmSpan(model=f"m{k}-{i}", provider="openai", service_name="s",
                        prompt_tokens=1, completion_tokens=1, latency_ms_total=10)
                for i in range(100)]  # 5 x 100 models: within LabelLimits.models

    async def run() -> list[int]:
        sizes = []
        for k in range(5):
            await exporter.export(batch(k))  # 100 new groups: ~1,400 children
            gc.collect()
            sizes.append(len(gc.get_objects()))
        return sizes

    sizes = asyncio.run(run())
    assert long_lived.freezes >= 4
    assert max(sizes) - min(sizes) < 10_000, sizes  # +20,000 a batch otherwise


def test_export_yields_to_the_loop_while_making_many_label_sets() -> None:
    """A batch of 2,000 new label sets (~0.3 s) lets other tasks run meanwhile and is
    recorded whole."""
    metrics = LlmMetrics(CollectorRegistry())
    exporter = PrometheusExporter(metrics)
    spans = [LlmSpan(model=f"m{i}", provider="openai", service_name=f"s{i % 7}",
                     prompt_tokens=2, completion_tokens=3, latency_ms_total=10)
             for i in range(2000)]

    async def run() -> int:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)
        task = asyncio.create_task(ticker())
        await exporter.export(spans)
        done.set()
        await task
        return ticks

    assert asyncio.run(run()) > 10
    total = sum(s.value for f in metrics.tokens.collect() for s in f.samples
                if s.name == "llm_tokens_total")
    assert total == 2000 * 5
