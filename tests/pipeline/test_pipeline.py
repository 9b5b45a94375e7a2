from __future__ import annotations

from collections.abc import Sequence

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from llm_observe.pipeline import Backpressure, Batch, Pipeline
from llm_observe.pipeline.selfmetrics import PipelineStats
from llm_observe.span import LlmSpan
from tests.loopwatch import worst_hold


class Doubler:
    name = "doubler"
    blocking = False

    def process(self, batch: list[LlmSpan]) -> None:
        for span in batch:
            if span.model == "poison":
                raise ValueError("bad span")
            span.prompt_tokens = 2 * len(span.model)  # idempotent, per contract


class ThreadedMarker:
    name = "threaded"
    blocking = True

    def process(self, batch: list[LlmSpan]) -> None:
        import threading
        for span in batch:
            span.extra["thread"] = threading.current_thread().name


class Sink:
    name = "sink"

    def __init__(self, room: bool = True) -> None:
        self.got: list[LlmSpan] = []
        self.room = room

    def has_room(self, n: int) -> bool:
        return self.room

    async def export(self, batch: Sequence[LlmSpan]) -> None:
        self.got.extend(batch)

    async def shutdown(self, timeout: float) -> None:
        return None


async def test_processors_run_in_order_and_a_bad_span_loses_no_neighbour() -> None:
    sink = Sink()
    pipeline = Pipeline([Doubler(), ThreadedMarker()], [sink])
    batch = [LlmSpan("a", "p", prompt_tokens=1), LlmSpan("poison", "p", prompt_tokens=1),
             LlmSpan("b", "p", prompt_tokens=3)]
    await pipeline.submit(batch)
    assert [s.prompt_tokens for s in sink.got] == [2, 1, 2]
    assert sink.got[1].errors == ["doubler"] and sink.got[0].errors == []
    assert pipeline.chain.stats["doubler"].errors == 1
    assert all(s.extra["thread"].startswith("llm-observe-cpu") for s in sink.got)
    await pipeline.shutdown()


async def test_full_exporter_refuses_before_any_work() -> None:
    sink = Sink(room=False)
    pipeline = Pipeline([Doubler()], [sink])
    span = LlmSpan("a", "p", prompt_tokens=1)
    with pytest.raises(Backpressure, match="sink"):
        await pipeline.submit([span])
    assert span.prompt_tokens == 1 and sink.got == []
    await pipeline.shutdown()


class Lifecycle(Sink):
    """A sink that records the calls the pipeline makes on it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def start(self) -> None:
        self.calls.append("start")

    async def export(self, batch: Sequence[LlmSpan]) -> None:
        self.calls.append("export")
        await super().export(batch)

    async def shutdown(self, timeout: float) -> None:
        self.calls.append("shutdown")


async def test_the_pipeline_starts_and_stops_its_exporters_once_each() -> None:
    sink = Lifecycle()
    pipeline = Pipeline([Doubler()], [sink])
    await pipeline.start()
    await pipeline.start()
    await pipeline.submit([LlmSpan("a", "p")])
    await pipeline.shutdown()
    await pipeline.shutdown()
    assert sink.calls == ["start", "export", "shutdown"]


async def test_a_batch_carries_its_origin_to_the_exporters_and_counts_its_other_spans() -> None:
    class Received:
        n_other = 4

    sink = Lifecycle()
    pipeline = Pipeline([], [sink])
    origin = Received()
    got: list[object] = []

    async def export(batch: Sequence[LlmSpan]) -> None:
        got.append(batch.origin)  # type: ignore[attr-defined]

    sink.export = export  # type: ignore[method-assign]
    await pipeline.submit(Batch([LlmSpan("a", "p")], origin))
    await pipeline.submit(Batch([], origin))  # a request of only non-LLM spans still goes on
    assert got == [origin, origin]
    assert pipeline.exporter_stats["sink"].spans == 5 + 4


async def test_processor_and_exporter_stats_are_exported_as_self_metrics() -> None:
    registry = CollectorRegistry()
    pipeline = Pipeline([Doubler()], [Sink()])
    registry.register(PipelineStats(pipeline))
    await pipeline.submit([LlmSpan("a", "p"), LlmSpan("poison", "p")])
    full = Pipeline([Doubler()], [Sink(room=False)])
    with pytest.raises(Backpressure):
        await full.submit([LlmSpan("a", "p")])
    refusing = CollectorRegistry()
    refusing.register(PipelineStats(full))
    text = generate_latest(registry).decode() + generate_latest(refusing).decode()
    assert 'llm_observe_processor_spans_total{processor="doubler"} 2.0' in text
    assert 'llm_observe_processor_errors_total{processor="doubler"} 1.0' in text
    assert 'llm_observe_exporter_spans_total{exporter="sink"} 2.0' in text
    assert 'llm_observe_exporter_refusals_total{exporter="sink"} 1.0' in text
    seconds = [line for line in text.splitlines()
               if line.startswith('llm_observe_processor_seconds_total{processor="doubler"}')]
    assert seconds and float(seconds[0].split()[-1]) > 0
    await pipeline.shutdown()
    await full.shutdown()


class TextCounter:
    """A processor that does CPU work proportional to the text, in pure Python."""

    name = "text"
    blocking = False

    def process(self, batch: list[LlmSpan]) -> None:
        import threading
        for span in batch:
            span.extra["thread"] = threading.current_thread().name
            span.prompt_tokens = sum(1 for ch in span.prompt_text or "" if ch == " ")


async def test_a_large_batch_is_enriched_off_the_loop_and_the_loop_keeps_answering() -> None:
    pipeline = Pipeline([TextCounter()], [Sink()])
    big = [LlmSpan("m", "p", prompt_text="word " * 400_000) for _ in range(4)]  # 8M chars
    small = [LlmSpan("m", "p", prompt_text="a few words")]
    holds, _ = await worst_hold(pipeline.submit(big))
    await pipeline.submit(small)
    assert all(s.extra["thread"].startswith("llm-observe-cpu") for s in big)
    assert big[0].prompt_tokens == 400_000
    assert small[0].extra["thread"] == "MainThread"  # small batches stay inline
    holds.check(0.1)
    await pipeline.shutdown()
