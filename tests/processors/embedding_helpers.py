"""Spans, clocks and embedder stand-ins for the EmbeddingProcessor tests."""

from __future__ import annotations

import hashlib
import itertools
import threading
import time

from llm_observe.embedding import Embedder
from llm_observe.pipeline import Batch
from llm_observe.sampling import should_sample
from llm_observe.span import LlmSpan

_ids = itertools.count()


class Clock:
    """A clock that moves only when the test says so. On it a model run takes no time, so the
    tests of the rate bucket pass ``unit_seconds=0``: no model-time estimate either."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def span(prompt: str | None, *, sampled: bool) -> LlmSpan:
    s = LlmSpan(model="gpt-4o-mini", provider="openai", prompt_text=prompt)
    s.is_sampled = sampled
    return s


def gate_id(passes: bool) -> str:
    """A fresh span id that the deterministic 1% gate passes (or not)."""
    while True:
        span_id = f"{next(_ids):016x}"
        if should_sample(span_id) is passes:
            return span_id


def flagged(n: int, tag: str, words: int = 0) -> list[LlmSpan]:
    """Spans their sender marked sampled whose ids the 1% gate would not pass; their prompts
    are distinct, ~20 model tokens (one embedding unit) plus ``words``."""
    padding = " and more" * (words // 2)
    spans = [span(f"{tag} {i}: summarise ticket #{i} about a refund for order {i * 7919}"
                  + padding, sampled=True) for i in range(n)]
    for s in spans:
        s.span_id = gate_id(False)
    return spans


def gated(n: int, tag: str, words: int = 0) -> list[LlmSpan]:
    """Sampled spans whose ids pass the 1% gate."""
    spans = flagged(n, tag, words)
    for s in spans:
        s.span_id = gate_id(True)
    return spans


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class TimedEmbedder:
    """The real embedder, with the length of each model run recorded."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.runs: list[float] = []

    @property
    def ready(self) -> bool:
        return self.embedder.ready

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        start = time.monotonic()
        try:
            return self.embedder.embed_batch(texts)
        finally:
            self.runs.append(time.monotonic() - start)


class Sink:
    """An exporter that keeps what it is handed."""

    name = "sink"

    def __init__(self) -> None:
        self.spans: list[LlmSpan] = []

    def has_room(self, n: int) -> bool:
        return True

    async def start(self) -> None:
        return None

    async def export(self, batch: Batch) -> None:
        self.spans.extend(batch)

    async def shutdown(self, timeout: float) -> None:
        return None


class SlowModel:
    """The real embedder on a fake clock: every run takes ``seconds`` of it."""

    def __init__(self, embedder: Embedder, clock: Clock, seconds: float) -> None:
        self.embedder, self.clock, self.seconds = embedder, clock, seconds
        self.ready = True

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        self.clock.now += self.seconds
        return self.embedder.embed_batch(texts)


class BlockingEmbedder:
    """Holds every embed_batch call until released: prompts pile up in flight."""

    ready = True

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        self.entered.release()
        assert self.release.wait(10)
        return [[0.0] * 384 for _ in texts]
