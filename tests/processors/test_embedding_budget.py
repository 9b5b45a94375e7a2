"""The embedding budget: whatever marks spans sampled, model work stays within the rate
(embeddings a second, longer prompts costing more), the model-time share and the queue bound;
the deterministic 1% gate's spans go first; over budget a span goes on sampled, hashed and
counted."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from llm_observe.embedding import Embedder
from llm_observe.pipeline import Pipeline, ProcessorChain
from llm_observe.processors.budget import PromptCost
from llm_observe.processors.embedding import EmbeddingProcessor
from llm_observe.processors.sampling import SamplingProcessor
from tests.embedding.helpers import cosine, ready_embedder
from tests.processors.embedding_helpers import (
    BlockingEmbedder,
    Clock,
    Sink,
    SlowModel,
    TimedEmbedder,
    flagged,
    gated,
    sha256,
    span,
)


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return ready_embedder(tmp_path_factory)


def test_2000_client_flagged_spans_cost_at_most_the_budget(embedder: Embedder) -> None:
    """Real clock, real model: a sender that flags every span gets the budget, no more."""
    spans = flagged(2000, "client")
    timed = TimedEmbedder(embedder)
    start = time.monotonic()
    processor = EmbeddingProcessor(timed, max_per_s=50, queue_max=256,  # type: ignore[arg-type]
                                   max_busy=0.5)
    chain = ProcessorChain([SamplingProcessor(), processor])
    for i in range(0, len(spans), 100):
        chain.run(spans[i:i + 100])
    elapsed = time.monotonic() - start
    stats = processor.stats
    assert 0 < stats.prompts <= stats.units <= processor.bucket.capacity + 50 * elapsed
    # Model time: the banked half second, half of the wall clock, and the run that overdrew.
    assert sum(timed.runs) <= 0.5 + 0.5 * elapsed + max(timed.runs)
    assert stats.embedded == stats.prompts  # distinct prompts: one span each
    assert stats.skipped["rate"] + stats.skipped["busy"] == 2000 - stats.embedded
    assert stats.skipped["queue"] == stats.skipped["not_ready"] == 0
    assert all(s.is_sampled and s.prompt_hash == sha256(s.prompt_text or "") for s in spans)
    assert all(s.errors == [] for s in spans)
    with_vector = [s for s in spans if s.embedding is not None]
    assert len(with_vector) == stats.embedded
    assert cosine(with_vector[-1].embedding or [],
                  embedder.embed([with_vector[-1].prompt_text or ""])[0]) >= 0.99999


def test_over_budget_flagged_spans_are_passed_on_sampled_and_hashed(embedder: Embedder) -> None:
    sink = Sink()
    processor = EmbeddingProcessor(embedder, max_per_s=50, unit_seconds=0, clock=Clock())
    pipeline = Pipeline([SamplingProcessor(), processor], [sink])
    spans = flagged(500, "piped")

    async def run() -> None:
        for i in range(0, 500, 100):
            await pipeline.submit(spans[i:i + 100])
        await pipeline.shutdown(1)

    asyncio.run(run())
    assert sink.spans == spans
    assert all(s.is_sampled and s.prompt_hash == sha256(s.prompt_text or "") for s in sink.spans)
    assert sum(s.embedding is not None for s in sink.spans) == 25
    assert processor.stats.skipped["rate"] == 475


def test_one_batch_of_20000_flagged_spans_embeds_at_most_the_burst(embedder: Embedder) -> None:
    processor = EmbeddingProcessor(embedder, max_per_s=50)
    batch = flagged(20_000, "flood")
    processor.process(batch)
    # Sender-flagged prompts spend only the budget above the gate's reserve: at most half the
    # burst (25 of 50), and half the 0.5 s of model time at the first estimate of 25 ms a prompt.
    embedded = processor.stats.prompts
    assert 0 < embedded <= 10 < processor.bucket.capacity - processor.reserve
    assert processor.stats.skipped["rate"] + processor.stats.skipped["busy"] == 20_000 - embedded
    assert all(s.is_sampled and s.prompt_hash is not None for s in batch)


def test_the_budget_refills_at_the_rate(embedder: Embedder) -> None:
    clock = Clock()
    processor = EmbeddingProcessor(embedder, max_per_s=40, unit_seconds=0, clock=clock)
    spans = flagged(2000, "stepped")
    for i in range(0, 2000, 100):  # 20 batches, 1/8 s apart: 5 new tokens each
        processor.process(spans[i:i + 100])
        clock.now += 0.125
    # 20 from the burst (40) above the reserve (20), then the 5 tokens of each of 19 refills.
    assert processor.stats.prompts == 20 + 19 * 5
    assert processor.stats.skipped["rate"] == 2000 - 115


def test_gate_spans_go_first_and_keep_a_reserve_against_a_flood(embedder: Embedder) -> None:
    clock = Clock()  # frozen: no refill, only the burst of 20
    processor = EmbeddingProcessor(embedder, max_per_s=20, burst=20, reserve=10,
                                   unit_seconds=0, clock=clock)
    flood, gate = flagged(200, "flood"), gated(6, "gate")
    batch = flood[:100] + gate[:3] + flood[100:] + gate[3:4]
    processor.process(batch)
    assert all(s.embedding is not None for s in gate[:4])
    # 20 - 4 for the gate's spans, then the flood only down to the reserve of 10.
    assert sum(s.embedding is not None for s in flood) == 6
    # A later batch: the flood finds the bucket at its reserve, the gate's spans do not.
    more = flagged(50, "flood2")
    processor.process(more + gate[4:])
    assert all(s.embedding is None for s in more)
    assert all(s.embedding is not None for s in gate[4:])
    assert processor.stats.skipped["rate"] == 194 + 50
    assert processor.bucket.level == 8


def test_the_1pct_gate_within_budget_embeds_all_its_spans_beside_a_flood(
        embedder: Embedder) -> None:
    clock = Clock()
    processor = EmbeddingProcessor(embedder, max_per_s=100, unit_seconds=0, clock=clock)
    plain = [span(f"question {i} about invoices", sampled=False) for i in range(3000)]
    flood = flagged(1000, "flood")
    batch = plain[:1500] + flood + plain[1500:]
    ProcessorChain([SamplingProcessor(), processor]).run(batch)
    by_gate = [s for s in plain if s.is_sampled]
    assert 10 <= len(by_gate) <= 60  # the gate's 1% of 3,000 ids
    assert all(s.embedding is not None for s in by_gate)
    assert sum(s.embedding is not None for s in flood) == 100 - 50 - len(by_gate)
    assert all(s.is_sampled for s in flood)


def test_prompts_in_these_tests_cost_one_unit_and_window_long_ones_eight(
        embedder: Embedder) -> None:
    processor = EmbeddingProcessor(embedder)
    assert {processor.cost(s.prompt_text or "") for s in flagged(300, "unit")} == {1}
    assert {processor.cost(s.prompt_text or "") for s in flagged(5, "long", 300)} == {8}


def test_a_long_prompt_costs_more_of_the_budget(embedder: Embedder) -> None:
    processor = EmbeddingProcessor(embedder, max_per_s=50, unit_seconds=0, clock=Clock())
    long = gated(10, "long", words=300)  # past the 256-token window: 8 units each
    processor.process(long)
    assert sum(s.embedding is not None for s in long) == 6  # 48 of the burst's 50
    assert processor.stats.units == 48
    assert processor.stats.skipped["rate"] == 4


def test_model_time_over_its_share_pauses_embedding_until_repaid(embedder: Embedder) -> None:
    clock = Clock()
    processor = EmbeddingProcessor(SlowModel(embedder, clock, 2.0),  # type: ignore[arg-type]
                                   max_per_s=1000, max_busy=0.5, clock=clock)
    first = gated(1, "slow")
    processor.process(first)  # 2 s of model time against 0.5 banked: 1.5 s in debt
    assert first[0].embedding is not None
    assert processor.stats.seconds == 2.0
    held = gated(3, "held")
    processor.process(held)
    clock.now += 3.0  # repays exactly the debt: still nothing to spend
    processor.process(held[1:2])
    assert all(s.embedding is None for s in held)
    assert processor.stats.skipped["busy"] == 4
    clock.now += 0.2  # 0.1 s of model time to spend: the gate's spans, not the flood's
    gate, flood = gated(1, "gate back"), flagged(1, "flood back")
    processor.process(flood + gate)
    assert gate[0].embedding is not None and flood[0].embedding is None
    assert processor.stats.skipped["busy"] == 5


def test_the_estimated_model_time_bounds_one_call(embedder: Embedder) -> None:
    def fresh() -> EmbeddingProcessor:
        return EmbeddingProcessor(embedder, max_per_s=1000, max_busy=0.5, unit_seconds=0.125,
                                  clock=Clock())

    gate, flood = gated(10, "estimate gate"), flagged(10, "estimate flood")
    for_gate, for_flood = fresh(), fresh()
    for_gate.process(gate)  # 0.5 s banked, 0.125 s a prompt: four
    assert sum(s.embedding is not None for s in gate) == 4
    for_flood.process(flood)  # sender-flagged: only down to the 0.25 s reserve
    assert sum(s.embedding is not None for s in flood) == 2
    assert (for_gate.stats.skipped["busy"], for_flood.stats.skipped["busy"]) == (6, 8)


def test_queue_max_bounds_prompts_in_flight_across_threads() -> None:
    fake = BlockingEmbedder()
    processor = EmbeddingProcessor(fake, max_per_s=10_000, queue_max=250,  # type: ignore[arg-type]
                                   cost=PromptCost(count_tokens=lambda text: 10),
                                   unit_seconds=0, clock=Clock())
    first, second = flagged(200, "first"), flagged(100, "second")
    worker = threading.Thread(target=processor.process, args=(first,))
    worker.start()
    assert fake.entered.acquire(timeout=10)  # 200 prompts now in flight
    late = threading.Thread(target=processor.process, args=(second,))
    late.start()
    assert fake.entered.acquire(timeout=10)  # the second caller got the 50 left
    fake.release.set()
    worker.join(10)
    late.join(10)
    assert sum(s.embedding is not None for s in first) == 200
    assert sum(s.embedding is not None for s in second) == 50
    assert processor.stats.skipped["queue"] == 50 and processor.stats.skipped["rate"] == 0
    processor.process(flagged(10, "after"))  # in-flight went back to 0
    assert processor.stats.prompts == 260
