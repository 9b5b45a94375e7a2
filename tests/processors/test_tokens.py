from __future__ import annotations

from pathlib import Path

from llm_observe import semconv
from llm_observe.pipeline import Processor, ProcessorChain
from llm_observe.processors.tokens import TokensProcessor
from llm_observe.span import LlmSpan
from llm_observe.tokens import TokenCounter, count_text_tokens
from llm_observe.tokens.encodings import EncodingStore

PROMPT = ("You are a support assistant for an online bookshop. A customer asks whether the "
          "paperback edition of 'Middlemarch' ships to Canada and how long delivery takes.")
COMPLETION = "Yes, it ships to Canada. Standard delivery takes 5-8 business days."


def _exact(text: str, model: str = "gpt-4o") -> int:
    # count_text_tokens equals tiktoken's own count (tests/tokens/test_counter.py).
    result = count_text_tokens(text, model)
    assert result.method == semconv.METHOD_EXACT
    return result.tokens


def _span(**fields: object) -> LlmSpan:
    span = LlmSpan(model="gpt-4o", provider="openai", prompt_text=PROMPT,
                   completion_text=COMPLETION)
    for key, value in fields.items():
        setattr(span, key, value)
    return span


def test_is_a_non_blocking_processor() -> None:
    processor = TokensProcessor()
    assert isinstance(processor, Processor)
    assert processor.name == "tokens"
    assert processor.blocking is False


def test_fills_missing_counts_exactly() -> None:
    span = _span()
    TokensProcessor().process([span])
    assert span.prompt_tokens == _exact(PROMPT)
    assert span.completion_tokens == _exact(COMPLETION)
    assert span.token_count_method == semconv.METHOD_EXACT


def test_keeps_provider_reported_counts() -> None:
    span = _span(prompt_tokens=1234, completion_tokens=56)
    TokensProcessor().process([span])
    assert (span.prompt_tokens, span.completion_tokens) == (1234, 56)
    assert span.token_count_method is None


def test_fills_only_the_missing_side() -> None:
    span = _span(prompt_tokens=1234)
    TokensProcessor().process([span])
    assert span.prompt_tokens == 1234
    assert span.completion_tokens == _exact(COMPLETION)
    assert span.token_count_method == semconv.METHOD_EXACT


def test_keeps_a_method_already_set() -> None:
    span = _span(token_count_method=semconv.METHOD_HEURISTIC)
    TokensProcessor().process([span])
    assert span.token_count_method == semconv.METHOD_HEURISTIC


def test_span_without_text_is_left_alone() -> None:
    span = LlmSpan(model="gpt-4o", provider="openai")
    TokensProcessor().process([span])
    assert (span.prompt_tokens, span.completion_tokens, span.token_count_method) == (0, 0, None)


def test_unknown_model_gets_the_heuristic() -> None:
    span = _span(model="claude-3-5-sonnet-20241022", provider="anthropic")
    TokensProcessor().process([span])
    assert span.prompt_tokens == -(-len(PROMPT.encode()) // 4)
    assert span.token_count_method == semconv.METHOD_HEURISTIC


def test_actual_model_is_preferred_over_the_requested_alias() -> None:
    # A router alias the tokenizer cannot know, resolved by the provider.
    span = _span(model="my-default-route", actual_model="gpt-4-0613")
    TokensProcessor().process([span])
    assert span.prompt_tokens == _exact(PROMPT, "gpt-4-0613")
    assert span.prompt_tokens != _exact(PROMPT, "gpt-4o")  # the encodings differ here
    assert span.token_count_method == semconv.METHOD_EXACT


def test_offline_store_missing_means_heuristic_not_failure(tmp_path: Path) -> None:
    processor = TokensProcessor(TokenCounter(EncodingStore([tmp_path])))
    span = _span()
    processor.process([span])
    assert span.token_count_method == semconv.METHOD_HEURISTIC
    assert span.prompt_tokens > 0


def test_runs_in_the_chain_on_a_mixed_batch_without_errors() -> None:
    batch = [_span(), _span(prompt_tokens=10, completion_tokens=2),
             _span(model="gemini-2.0-flash", provider="google"),
             LlmSpan(model="gpt-4o-mini", provider="openai")]
    chain = ProcessorChain([TokensProcessor()])
    chain.run(batch)
    assert chain.stats["tokens"].errors == 0
    assert [s.token_count_method for s in batch] == ["exact", None, "heuristic", None]
    assert all(not s.errors for s in batch)


def test_a_call_showing_no_usage_and_no_output_is_never_exact() -> None:
    seen = LlmSpan("gpt-4o", "openai", prompt_text="Weather in Paris?", completion_text="Sunny.")
    unseen = LlmSpan("gpt-4o", "openai", prompt_text="Weather in Paris?")
    failed = LlmSpan("gpt-4o", "openai", prompt_text="Weather in Paris?", status="error")
    TokensProcessor().process([seen, unseen, failed])
    assert seen.token_count_method == "exact"
    assert unseen.token_count_method == "heuristic" and unseen.prompt_tokens > 0
    assert failed.token_count_method == "exact"  # an error has no answer to miss


def test_a_text_past_the_bound_is_counted_on_its_prefix_and_extrapolated() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 10_000  # 450,000 chars
    exact = TokensProcessor()
    whole = LlmSpan("gpt-4o", "openai", prompt_text=text, completion_text="ok")
    exact.process([whole])  # the default bound (100,000) is below the text: extrapolated
    bounded = TokensProcessor(max_text_chars=len(text) + 1)
    reference = LlmSpan("gpt-4o", "openai", prompt_text=text, completion_text="ok")
    bounded.process([reference])
    assert reference.token_count_method == "exact" and reference.notes == []
    assert whole.token_count_method == "heuristic"
    assert abs(whole.prompt_tokens - reference.prompt_tokens) <= reference.prompt_tokens * 0.01
    assert whole.notes == ["prompt tokens: counted 100000 of 450000 characters, "
                           "rest extrapolated"]
