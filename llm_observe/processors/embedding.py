"""Prompt hash and MiniLM embedding for sampled spans, within a budget (spec 3: sampling).

A sampled span (``is_sampled``, set by the sampling processor that runs before this one, or
by the span's sender) gets ``prompt_hash``, the SHA-256 hex of its prompt text (to group
repeated prompts), and, within the embedding budget, ``embedding``: its 384-d
all-MiniLM-L6-v2 vector. An unsampled span gets neither: no hashing and no model work.

The budget: a sender may mark every span sampled, and a prompt costs 4-100 ms of model time,
so without a bound one client's flag takes the pipeline's executor thread (and the batches of
every other client queued behind it) for minutes. Model work is bounded three ways:

- ``rate``: a token bucket of ``max_per_s`` embeddings a second, ``burst`` at once. A token
  is one distinct prompt of up to 32 model tokens; a longer one costs ``ceil(tokens / 32)``,
  at most 8 (:class:`~llm_observe.processors.budget.PromptCost`). Spans repeating a prompt
  share its vector and its cost.
- ``busy``: model time at most ``max_busy`` of the wall clock: a bucket of seconds, charged
  with each run's measured time; a call admits prompts while the bucket, less their
  estimated time, stays above zero. The rate cannot outrun a slow or loaded CPU, and one call
  overdraws by at most one prompt and the estimate's error.
- ``queue``: at most ``queue_max`` prompts waiting for or in a model run at once, across
  every thread that calls :meth:`EmbeddingProcessor.process`.

Over budget a span goes on sampled and hashed but without an embedding, counted by reason
(:data:`SKIP_REASONS`). Spans that pass the deterministic 1% gate (``should_sample`` on the
span id, whoever set the flag) go first; sender-flagged spans only spend what is left above
a reserve (half of each bucket by default), kept for the gate's spans of later batches. The
prompts within budget go to the model in one ``Embedder.embed_batch`` call, so its
length-aware batching still sees them all. While the model warms up (or failed to load),
sampled spans get their hash and are counted ``not_ready``: the pipeline never waits.

The processor is ``blocking``: the pipeline runs it in an executor thread.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from llm_observe.embedding.embedder import EmbedderNotReady
from llm_observe.processors.budget import PromptCost, TokenBucket
from llm_observe.sampling import should_sample
from llm_observe.span import LlmSpan

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from llm_observe.embedding.embedder import Embedder

# Why a sampled span went on without an embedding: over the embeddings-per-second bucket, over
# the model-time share, over the queue bound, model still warming up (or failed to load), no
# prompt text to embed.
SKIP_REASONS = ("rate", "busy", "queue", "not_ready", "no_text")
# Model time of one rate token (a 32-token prompt) before the first run is measured: ~5 ms on
# the quiet 2-core dev box, 11-25 ms under load; starting high keeps a flood's first call
# from overdrawing the gate's reserve. Each run moves the estimate 30% of the way to what it
# measured.
_UNIT_SECONDS = 0.025
_EWMA = 0.3


@dataclass(slots=True)
class EmbeddingStats:
    """Counters for the self-metrics (plain numbers, read at scrape time)."""

    hashed: int = 0       # sampled spans that got a prompt hash
    embedded: int = 0     # sampled spans that got an embedding
    prompts: int = 0      # distinct prompts run through the model
    units: int = 0        # rate tokens they cost
    seconds: float = 0.0  # model time they took
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SKIP_REASONS, 0))


@dataclass(slots=True)
class _Prompt:
    """One distinct prompt of a batch and the sampled spans that carry it."""

    text: str
    spans: list[LlmSpan] = field(default_factory=list)
    cost: int = 0  # rate tokens taken for it


def prompt_hash(text: str) -> str:
    """SHA-256 hex digest of the prompt's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingProcessor:
    """Processor ``embedding`` (blocking): hash every sampled prompt, embed within budget."""

    name = "embedding"
    blocking = True

    def __init__(self, embedder: Embedder, *, max_per_s: float = 50.0, queue_max: int = 256,
                 max_busy: float = 0.5, burst: int | None = None, reserve: int | None = None,
                 cost: PromptCost | None = None, unit_seconds: float = _UNIT_SECONDS,
                 registry: CollectorRegistry | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``burst`` defaults to one second of ``max_per_s`` but at least two window-long
        prompts, ``reserve`` to half of it; ``max_busy`` is a share of the wall clock (0-1],
        banked for at most one second; ``unit_seconds`` is the first estimate of a rate
        token's model time; ``registry`` gets the ``llm_observe_embedding_*`` counters;
        ``clock`` refills both buckets and times the model runs."""
        if not max_per_s > 0:
            raise ValueError("max_per_s must be > 0")
        if queue_max < 1:
            raise ValueError("queue_max must be >= 1")
        if not 0 < max_busy <= 1:
            raise ValueError("max_busy must be in (0, 1]")
        if unit_seconds < 0:
            raise ValueError("unit_seconds must be >= 0")
        self.cost = cost if cost is not None else PromptCost()
        burst = burst if burst is not None else max(round(max_per_s), 2 * self.cost.max_units)
        reserve = reserve if reserve is not None else burst // 2
        if not 0 <= reserve < burst:
            raise ValueError("reserve must be >= 0 and below burst")
        self.embedder = embedder
        self.queue_max = queue_max
        self.reserve = reserve
        self.bucket = TokenBucket(max_per_s, burst, clock)
        self.busy = TokenBucket(max_busy, max_busy, clock)  # seconds of model time
        self.busy_reserve = max_busy * reserve / burst
        self.stats = EmbeddingStats()
        self._clock = clock
        self._lock = threading.Lock()  # the buckets and the in-flight count, across threads
        self._in_flight = 0
        self._unit_seconds = unit_seconds  # model time of one rate token, measured as we go
        if registry is not None:
            registry.register(EmbeddingMetrics(self.stats))

    def process(self, batch: list[LlmSpan]) -> None:
        """Enrich sampled spans in place; unsampled spans are not touched."""
        prompts = self._hash(batch)
        if not prompts:
            return
        if not self.embedder.ready:
            self._skip("not_ready", prompts.values())
            return
        admitted = self._admit(prompts)
        if not admitted:
            return
        units = sum(p.cost for p in admitted)
        vectors: list[list[float]] | None = None
        start = self._clock()
        try:
            vectors = self.embedder.embed_batch([p.text for p in admitted])
        except EmbedderNotReady:
            pass
        finally:
            seconds = max(0.0, self._clock() - start)
            with self._lock:
                self._in_flight -= len(admitted)
                self.busy.spend(seconds)
                if vectors is None:  # not run (or raised): the rate tokens were not spent
                    self.bucket.put_back(units)
                else:
                    self._unit_seconds += _EWMA * (seconds / units - self._unit_seconds)
        if vectors is None:
            self._skip("not_ready", admitted)
            return
        self.stats.seconds += seconds
        self.stats.prompts += len(admitted)
        self.stats.units += units
        for prompt, vector in zip(admitted, vectors, strict=True):
            for span in prompt.spans:
                # Each span owns its list: exporters may mutate or serialise them separately.
                span.embedding = list(vector)
            self.stats.embedded += len(prompt.spans)

    def _hash(self, batch: list[LlmSpan]) -> dict[str, _Prompt]:
        """Set ``prompt_hash`` on every sampled span; its distinct prompts, in batch order."""
        prompts: dict[str, _Prompt] = {}
        no_text = 0
        for span in batch:
            if not span.is_sampled:
                continue
            text = span.prompt_text
            if text is None:
                no_text += 1
                continue
            digest = prompt_hash(text)
            span.prompt_hash = digest
            prompt = prompts.get(digest)
            if prompt is None:
                prompt = prompts[digest] = _Prompt(text)
            prompt.spans.append(span)
        self.stats.skipped["no_text"] += no_text
        self.stats.hashed += sum(len(p.spans) for p in prompts.values())
        return prompts

    def _admit(self, prompts: dict[str, _Prompt]) -> list[_Prompt]:
        """The prompts within budget, in order, gate spans' first; count the spans of the
        others under the limit that stopped them (``busy``, ``queue`` or ``rate``)."""
        gate: list[_Prompt] = []
        flagged: list[_Prompt] = []
        for prompt in prompts.values():
            is_gate = any(should_sample(s.span_id) for s in prompt.spans)
            (gate if is_gate else flagged).append(prompt)
        admitted: list[_Prompt] = []
        reason = ""
        with self._lock:
            room = max(0, self.queue_max - self._in_flight)
            time_left = self.busy.level  # model seconds banked, less the estimate of what we admit
            for group, keep, busy_keep in ((gate, 0, 0.0),
                                           (flagged, self.reserve, self.busy_reserve)):
                # Stop at the first prompt over budget: at most burst + 1 prompts are costed
                # (tokenized, ~50 us each), and no later prompt jumps ahead of it.
                taken = 0
                while not reason and taken < len(group):
                    prompt = group[taken]
                    if len(admitted) == room:
                        reason = "queue"
                        break
                    prompt.cost = self.cost(prompt.text)
                    seconds = prompt.cost * self._unit_seconds
                    # The model has had its share of the clock: a gate prompt may overdraw
                    # what is left, a sender-flagged one must fit above the gate's reserve.
                    if time_left <= busy_keep or (keep and time_left - seconds < busy_keep):
                        reason = "busy"
                    elif self.bucket.try_take(prompt.cost, keep=keep):
                        admitted.append(prompt)
                        time_left -= seconds
                        taken += 1
                    else:
                        reason = "rate"
                self._skip(reason, group[taken:])
            self._in_flight += len(admitted)
        return admitted

    def _skip(self, reason: str, prompts: Iterable[_Prompt]) -> None:
        spans = sum(len(p.spans) for p in prompts)
        if spans:
            self.stats.skipped[reason] += spans


class EmbeddingMetrics(Collector):
    """The processor's counters, read from its stats at scrape time (no lock on the hot
    path): ``llm_observe_embedding_{embedded,skipped,model_seconds}_total``."""

    def __init__(self, stats: EmbeddingStats) -> None:
        self.stats = stats

    def describe(self) -> list[Metric]:
        return []  # built at collect time, as pipeline.selfmetrics.PipelineStats

    def collect(self) -> Iterator[Metric]:
        embedded = CounterMetricFamily(
            "llm_observe_embedding_embedded", "Sampled spans that got an embedding")
        embedded.add_metric([], self.stats.embedded)
        skipped = CounterMetricFamily(
            "llm_observe_embedding_skipped", "Sampled spans passed on without an embedding, "
            "by reason (rate, busy, queue: over the embedding budget; not_ready: model warming "
            "up or failed; no_text: no prompt text)", labels=["reason"])
        for reason in SKIP_REASONS:
            skipped.add_metric([reason], self.stats.skipped[reason])
        seconds = CounterMetricFamily(
            "llm_observe_embedding_model_seconds", "Model time spent embedding sampled spans")
        seconds.add_metric([], self.stats.seconds)
        yield from (embedded, skipped, seconds)
