"""EmbeddingProcessor: hash + embedding for sampled spans only, never waiting for the model.
The embedding budget (rate, model time, queue) is tested in test_embedding_budget.py."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from llm_observe.embedding import Embedder, EmbedderNotReady, EmbeddingConfig
from llm_observe.pipeline import Processor, ProcessorChain
from llm_observe.processors.budget import PromptCost
from llm_observe.processors.embedding import EmbeddingProcessor
from tests.embedding.helpers import cosine, graph_cache, ready_embedder
from tests.processors.embedding_helpers import Clock, flagged, sha256, span


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return ready_embedder(tmp_path_factory)


def test_it_is_a_blocking_processor_named_embedding(embedder: Embedder) -> None:
    processor = EmbeddingProcessor(embedder)
    assert isinstance(processor, Processor)
    assert processor.name == "embedding" and processor.blocking is True


def test_sampled_spans_get_hash_and_embedding_unsampled_get_neither(embedder: Embedder) -> None:
    processor = EmbeddingProcessor(embedder)
    batch = [span("What is our refund policy?", sampled=True),
             span("Summarise this ticket.", sampled=False),
             span("Translate 'hello' into Spanish.", sampled=True),
             span("Unsampled text", sampled=False)]
    processor.process(batch)
    for s in batch:
        assert s.prompt_text is not None
        if s.is_sampled:
            assert s.prompt_hash == sha256(s.prompt_text)
            assert s.embedding is not None
            assert cosine(s.embedding, embedder.embed([s.prompt_text])[0]) >= 0.99999
        else:
            assert s.prompt_hash is None and s.embedding is None
    assert (processor.stats.hashed, processor.stats.embedded) == (2, 2)


def test_a_batch_without_sampled_spans_costs_no_model_work() -> None:
    cold = Embedder(EmbeddingConfig())  # never warmed: any embed attempt would be counted
    processor = EmbeddingProcessor(cold)
    batch = [span(f"prompt {i}", sampled=False) for i in range(50)]
    processor.process(batch)
    assert all(s.prompt_hash is None and s.embedding is None for s in batch)
    assert processor.stats.hashed == processor.stats.skipped["not_ready"] == 0


def test_while_warming_up_sampled_spans_get_the_hash_and_are_counted(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    warming = Embedder(EmbeddingConfig(cache_dir=str(graph_cache(tmp_path_factory))))
    processor = EmbeddingProcessor(warming, clock=Clock())
    batch = [span("first", sampled=True), span("second", sampled=True),
             span("skip", sampled=False)]
    processor.process(batch)  # returns without loading or waiting for the model
    assert [s.prompt_hash for s in batch] == [sha256("first"), sha256("second"), None]
    assert all(s.embedding is None for s in batch)
    assert processor.stats.skipped["not_ready"] == 2 and processor.stats.embedded == 0
    assert processor.bucket.level == 50  # no budget spent on a model that is not there
    assert not warming.ready


class FailedModel:
    """Ready, then the model is gone: embed_batch raises EmbedderNotReady."""

    ready = True

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        raise EmbedderNotReady("embedding model failed to load: gone")


def test_a_model_that_fails_mid_call_costs_no_budget() -> None:
    processor = EmbeddingProcessor(FailedModel(), unit_seconds=0,  # type: ignore[arg-type]
                                   cost=PromptCost(count_tokens=lambda text: 10), clock=Clock())
    batch = flagged(5, "gone")
    processor.process(batch)
    assert all(s.prompt_hash is not None and s.embedding is None for s in batch)
    assert processor.stats.skipped["not_ready"] == 5 and processor.stats.prompts == 0
    assert processor.bucket.level == processor.bucket.capacity


def test_repeated_prompts_share_one_vector_but_not_one_list(embedder: Embedder) -> None:
    processor = EmbeddingProcessor(embedder, clock=Clock())
    batch = [span("same prompt", sampled=True) for _ in range(3)]
    processor.process(batch)
    assert batch[0].embedding is not None
    assert batch[0].embedding == batch[1].embedding == batch[2].embedding
    assert batch[0].embedding is not batch[1].embedding
    assert len({s.prompt_hash for s in batch}) == 1
    assert processor.stats.embedded == 3
    assert processor.stats.prompts == 1  # one model embedding, one token


def test_sampled_span_without_prompt_text_is_left_alone(embedder: Embedder) -> None:
    processor = EmbeddingProcessor(embedder)
    s = span(None, sampled=True)
    processor.process([s])
    assert s.prompt_hash is None and s.embedding is None
    assert processor.stats.skipped["no_text"] == 1


def test_runs_in_a_processor_chain_without_marking_errors(embedder: Embedder) -> None:
    chain = ProcessorChain([EmbeddingProcessor(embedder)])
    batch = [span("a long prompt " * 400, sampled=True), span("", sampled=True)]
    chain.run(batch)
    assert all(s.errors == [] for s in batch)
    assert all(s.embedding is not None and len(s.embedding) == 384 for s in batch)
    assert chain.stats["embedding"].spans == 2


# --- the budget ----------------------------------------------------------------------------


def test_skips_are_counted_in_the_registry(embedder: Embedder) -> None:
    registry = CollectorRegistry()
    processor = EmbeddingProcessor(embedder, max_per_s=4, burst=4, reserve=2,
                                   unit_seconds=0, registry=registry, clock=Clock())
    processor.process([*flagged(10, "reg"), span(None, sampled=True)])
    text = generate_latest(registry).decode()
    assert 'llm_observe_embedding_skipped_total{reason="rate"} 8.0' in text
    assert 'llm_observe_embedding_skipped_total{reason="no_text"} 1.0' in text
    assert 'llm_observe_embedding_skipped_total{reason="queue"} 0.0' in text
    assert 'llm_observe_embedding_skipped_total{reason="not_ready"} 0.0' in text
    assert 'llm_observe_embedding_skipped_total{reason="busy"} 0.0' in text
    assert "llm_observe_embedding_embedded_total 2.0" in text
    assert "llm_observe_embedding_model_seconds_total" in text


@pytest.mark.parametrize("kwargs", [{"max_per_s": 0}, {"queue_max": 0}, {"max_busy": 0},
                                    {"burst": 4, "reserve": 4}])
def test_rejects_a_budget_that_could_never_embed(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        EmbeddingProcessor(Embedder(EmbeddingConfig()), **kwargs)  # type: ignore[arg-type]
