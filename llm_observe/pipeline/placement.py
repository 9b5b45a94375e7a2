"""Where a request's CPU work runs: on the event loop at once, on the loop in steps, or in
the process's one CPU thread (:mod:`pipeline.cpu`).

The work is Python under one GIL, so a second thread adds no parallelism; what it buys is
that the loop keeps answering other clients while a big request is walked, enriched and
re-encoded. It costs a lot for that: with four senders of 512-span text requests (the
OpenTelemetry SDKs' default batch), the loop thread and the CPU thread hand the GIL back
and forth all the time and the server spent ~10-30 % more CPU a span than doing the same
work on the loop alone (``bench.receiver --baseline``, paired rounds; bench/README.md,
"Stop 28: the thread layout"). So only a request too big to hold the loop for one step goes to the
thread; a middling one runs on the loop in steps — a yield between processors once
:data:`STEP_S` has passed, and before the forwarder's re-encode — so no step holds the
loop for more than ~10-25 ms on this machine (the walk of 1 MiB, the scan of 1,024
spans), and other clients' work runs between the steps.

- ``INLINE``: small (≤ 256 spans and ≤ 32,000 characters of text): straight through; a
  thread hop or a yield would cost a single REST record a third of its time.
- ``STEPS``: ≤ 1,024 spans, ≤ 512,000 characters of text, of which ≤ 32,000 still to be
  token-counted (~0.5 µs a character: counting is the one step whose cost grows with the
  text fast enough to matter): on the loop, in steps.
- ``THREAD``: anything larger, in the CPU thread whole.

Contract: :func:`place` and :func:`on_loop` are pure, cheap (one pass over the
spans' two texts) and never raise for any batch.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Sequence
from typing import TypeVar

from llm_observe.pipeline.cpu import cpu_executor
from llm_observe.span import LlmSpan

T = TypeVar("T")

INLINE_MAX_SPANS = 256
INLINE_MAX_TEXT_CHARS = 32_000
STEPS_MAX_SPANS = 1_024
STEPS_MAX_TEXT_CHARS = 512_000
STEPS_MAX_UNCOUNTED_CHARS = 32_000
# OTLP request bodies (protobuf): decoded and walked on the loop up to this size (the walk
# is ~15 µs a kB of LLM spans); larger ones in the CPU thread.
INLINE_MAX_BYTES = 1024 * 1024
# In steps, the loop is given back between processors once this much time has passed since
# it was last given back, and before the forwarder's re-encode. Each yield lets other
# requests' work in between, and interleaved requests cost CPU a span: a yield every
# processor ~7 % more than none, 5 ms steps ~5-9 % more than 10 or 15 ms (bench/README.md).
STEP_S = 0.010


class Place(enum.Enum):
    """Where a batch's processors (and its re-encode) run."""

    INLINE = "inline"
    STEPS = "steps"
    THREAD = "thread"


def place(batch: Sequence[LlmSpan]) -> Place:
    """Where ``batch`` is enriched and re-encoded: by its spans (LLM ones, or others in
    its origin request) and its text (its agent, tool and chain spans' texts are scanned
    too, processors/untrusted.py)."""
    size: int = getattr(batch, "size", len(batch))
    if size > STEPS_MAX_SPANS:
        return Place.THREAD
    chars: int = getattr(getattr(batch, "origin", None), "text_chars", 0)
    uncounted = 0
    for span in batch:
        if span.prompt_text is not None:
            chars += len(span.prompt_text)
            if not span.prompt_tokens:
                uncounted += len(span.prompt_text)
        if span.completion_text is not None:
            chars += len(span.completion_text)
            if not span.completion_tokens:
                uncounted += len(span.completion_text)
    if size <= INLINE_MAX_SPANS and chars <= INLINE_MAX_TEXT_CHARS:
        return Place.INLINE
    if chars <= STEPS_MAX_TEXT_CHARS and uncounted <= STEPS_MAX_UNCOUNTED_CHARS:
        return Place.STEPS
    return Place.THREAD


def on_loop(nbytes: int) -> bool:
    """Whether an OTLP protobuf body of ``nbytes`` is decoded and walked on the loop."""
    return nbytes <= INLINE_MAX_BYTES


async def run_placed(where: Place, fn: Callable[[], T]) -> T:
    """``fn()`` where ``where`` says: in the CPU thread, or on the loop (a step of its own
    for ``STEPS``: the loop is given back first)."""
    if where is Place.THREAD:
        return await asyncio.get_running_loop().run_in_executor(cpu_executor(), fn)
    if where is Place.STEPS:
        await asyncio.sleep(0)
    return fn()
