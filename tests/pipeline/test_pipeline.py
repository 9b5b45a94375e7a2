from __future__ import annotations

from collections.abc import Sequence

import pytest

from llm_observe.pipeline import Backpressure, Pipeline
from llm_observe.span import LlmSpan


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
    assert all(s.extra["thread"].startswith("llm-observe-proc") for s in sink.got)
    await pipeline.shutdown()


async def test_full_exporter_refuses_before_any_work() -> None:
    sink = Sink(room=False)
    pipeline = Pipeline([Doubler()], [sink])
    span = LlmSpan("a", "p", prompt_tokens=1)
    with pytest.raises(Backpressure, match="sink"):
        await pipeline.submit([span])
    assert span.prompt_tokens == 1 and sink.got == []
    await pipeline.shutdown()
