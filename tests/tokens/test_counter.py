from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from llm_observe import semconv
from llm_observe.tokens import TokenCount, TokenCounter, count_text_tokens, count_tokens
from llm_observe.tokens.encodings import EncodingStore
from llm_observe.tokens.heuristic import heuristic_tokens
from tests.tokens.samples import SAMPLES


@pytest.mark.parametrize(("model", "encoding"), [
    ("gpt-4o", "o200k_base"), ("gpt-5-mini", "o200k_base"), ("o3", "o200k_base"),
    ("gpt-4", "cl100k_base"), ("text-embedding-3-large", "cl100k_base"),
    ("text-davinci-003", "p50k_base"),
])
def test_text_counts_equal_tiktokens(model: str, encoding: str,
                                     reference: dict[str, tiktoken.Encoding]) -> None:
    for text in SAMPLES:
        result = count_text_tokens(text, model)
        assert result.tokens == len(reference[encoding].encode_ordinary(text)), text
        assert result.method == semconv.METHOD_EXACT
        assert result.encoding == encoding


def test_special_token_text_is_counted_as_ordinary_text(
        reference: dict[str, tiktoken.Encoding]) -> None:
    text = "ignore <|endoftext|> and <|endofprompt|>"
    expected = len(reference["o200k_base"].encode(text, disallowed_special=()))
    assert count_text_tokens(text, "gpt-4o").tokens == expected


@pytest.mark.parametrize("model", ["claude-3-5-sonnet-20241022", "gemini-2.0-flash",
                                   "llama-3.1-70b", "", "???"])
def test_unknown_models_use_the_heuristic(model: str) -> None:
    text = "The quick brown fox jumps over the lazy dog."  # 44 ASCII bytes
    result = count_text_tokens(text, model)
    assert result == TokenCount(11, semconv.METHOD_HEURISTIC, None)


def test_non_string_model_is_heuristic_not_an_error() -> None:
    model: Any = None
    assert count_tokens("hello world", model).method == semconv.METHOD_HEURISTIC


def test_heuristic_rule_is_utf8_bytes_over_four() -> None:
    assert heuristic_tokens("") == 0
    assert heuristic_tokens("a") == 1
    assert heuristic_tokens("abcd") == 1
    assert heuristic_tokens("abcde") == 2
    assert heuristic_tokens("你好世界") == 3  # 12 bytes
    assert heuristic_tokens("\ud800 lone surrogate") == 5  # never raises


def test_heuristic_chat_keeps_the_framing() -> None:
    messages = [{"role": "user", "content": "abcdefgh"}]
    # 3 framing + "user" (1) + "abcdefgh" (2) + 3 reply priming
    assert count_tokens(messages, "claude-3-opus").tokens == 9


def test_count_text_has_no_chat_framing_and_rejects_non_text() -> None:
    assert count_text_tokens("", "gpt-4o").tokens == 0
    bad: Any = ["a", "list"]
    with pytest.raises(ValueError, match="text must be a string"):
        count_text_tokens(bad, "gpt-4o")


def test_no_encoding_files_fall_back_to_the_heuristic(tmp_path: Path) -> None:
    counter = TokenCounter(EncodingStore([tmp_path]))
    result = counter.count_text("The quick brown fox jumps over the lazy dog.", "gpt-4o")
    assert result == TokenCount(11, semconv.METHOD_HEURISTIC, None)
    assert counter.text_tokens("abcdefgh", "gpt-4o") == (2, semconv.METHOD_HEURISTIC)


def test_fast_path_agrees_with_the_public_api() -> None:
    counter = TokenCounter()
    for model in ("gpt-4o", "openai/gpt-4-0613", "claude-3-haiku"):
        for text in SAMPLES:
            result = counter.count_text(text, model)
            assert counter.text_tokens(text, model) == (result.tokens, result.method)


def test_result_is_frozen_and_serialisable() -> None:
    result = count_tokens([{"role": "user", "content": "hi"}], "gpt-4o")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.tokens = 1  # type: ignore[misc]
    assert result.to_dict() == {"tokens": result.tokens, "method": "exact",
                                "encoding": "o200k_base", "image_tokens": 0, "notes": []}


def test_many_distinct_model_names_do_not_grow_the_cache_without_bound() -> None:
    counter = TokenCounter()
    for i in range(5000):
        counter.text_tokens("hi", f"made-up-model-{i}")
    assert len(counter._models) <= 4096
