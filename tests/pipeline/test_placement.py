"""Where a batch's work runs: straight on the loop, on the loop in steps, or in the CPU
thread (pipeline/placement.py) — and that a middling batch on the loop gives it back
between processors."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from llm_observe.pipeline import Batch, Pipeline, Place, on_loop, place
from llm_observe.span import LlmSpan
from tests.loopwatch import worst_hold

TEXT = "Summarise the attached quarterly report for the board, in five bullets. " * 3  # ~220


@dataclass
class Request:
    """An origin request: its other (agent, tool) spans and their texts' length."""

    n_other: int
    text_chars: int = 0


def spans(n: int, counted: bool = True, text: str = TEXT) -> list[LlmSpan]:
    tokens = 50 if counted else 0
    return [LlmSpan("gpt-4o", "openai", prompt_text=text, completion_text=text,
                    prompt_tokens=tokens, completion_tokens=tokens) for _ in range(n)]


def test_an_sdk_sized_text_request_stays_on_the_loop_in_steps() -> None:
    assert place(spans(1)) is Place.INLINE
    assert place(spans(256, text="short")) is Place.INLINE
    # the OpenTelemetry SDKs' default batch, ~440 characters a span, counts provided
    assert place(spans(512)) is Place.STEPS
    assert place(spans(1_024)) is Place.STEPS


def test_what_would_hold_the_loop_too_long_goes_to_the_thread() -> None:
    assert place(spans(1_025)) is Place.THREAD
    assert place(spans(512, counted=False)) is Place.THREAD  # ~225k characters to count
    assert place(spans(4, text="word " * 200_000)) is Place.THREAD  # 8M characters
    assert place(spans(60, counted=False, text="x" * 250)) is Place.INLINE  # 30k to count
    # the origin request's other spans count: their texts are scanned too
    many_tools = Batch(spans(10), origin=Request(300, text_chars=600_000))
    assert place(many_tools) is Place.THREAD
    assert place(Batch(spans(10), origin=Request(2_000))) is Place.THREAD


def test_request_bodies_up_to_one_mebibyte_are_walked_on_the_loop() -> None:
    assert on_loop(485_000)  # bench.receiver's 512-span text request
    assert on_loop(1024 * 1024)
    assert not on_loop(1024 * 1024 + 1)


class Burner:
    """A processor that spends ``ms`` of its thread's CPU time, and says where it ran."""

    blocking = False

    def __init__(self, name: str, ms: float) -> None:
        self.name, self.seconds = name, ms / 1000

    def process(self, batch: list[LlmSpan]) -> None:
        end = time.thread_time() + self.seconds
        while time.thread_time() < end:
            pass
        for span in batch:
            span.extra[self.name] = threading.current_thread().name


class Sink:
    name = "sink"

    def has_room(self, n: int) -> bool:
        return True

    async def export(self, batch: Sequence[LlmSpan]) -> None:
        return None

    async def shutdown(self, timeout: float) -> None:
        return None


async def test_a_batch_in_steps_runs_on_the_loop_and_gives_it_back_between_processors() -> None:
    burners = [Burner(f"p{i}", 25) for i in range(8)]  # 200 ms of work in all
    pipeline = Pipeline(burners, [Sink()])
    batch = spans(512)
    holds, _ = await worst_hold(pipeline.submit(batch))
    assert {batch[0].extra[b.name] for b in burners} == {"MainThread"}  # no thread hop
    # a few processors' 25 ms at a time, not the batch's 200: the ticker got the loop back
    # (a timer's task resumes two loop turns after it is due: up to three processors)
    holds.check(0.12)
    await pipeline.shutdown()
