"""The chat rule, checked against the OpenAI cookbook's API-verified counts.

Source: openai-cookbook examples/How_to_count_tokens_with_tiktoken.ipynb,
section 6: the API reported 129 prompt tokens for gpt-3.5-turbo / gpt-4-0613 /
gpt-4 and 124 for gpt-4o / gpt-4o-mini on these messages; an earlier revision
of the notebook reported 127 for gpt-3.5-turbo-0301.
"""

from __future__ import annotations

from typing import Any

import pytest
import tiktoken

from llm_observe import semconv
from llm_observe.tokens import count_tokens

COOKBOOK_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that "
                                  "translates corporate jargon into plain English."},
    {"role": "system", "name": "example_user",
     "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant",
     "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user",
     "content": "Let's circle back when we have more bandwidth to touch base on "
                "opportunities for increased leverage."},
    {"role": "system", "name": "example_assistant",
     "content": "Let's talk later when we're less busy about how to do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the ocean "
                                "for the client deliverable."},
]


@pytest.mark.parametrize(("model", "api_prompt_tokens"), [
    ("gpt-3.5-turbo", 129),
    ("gpt-4-0613", 129),
    ("gpt-4", 129),
    ("gpt-4o", 124),
    ("gpt-4o-mini", 124),
    ("gpt-3.5-turbo-0301", 127),
    ("openai/gpt-4o-2024-08-06", 124),
    ("azure/gpt-4-0613", 129),
])
def test_cookbook_messages_match_the_api(model: str, api_prompt_tokens: int) -> None:
    result = count_tokens(COOKBOOK_MESSAGES, model)
    assert result.tokens == api_prompt_tokens
    assert result.method == semconv.METHOD_EXACT
    assert result.notes == ()


def test_framing_is_3_per_message_1_per_name_3_for_the_reply(
        reference: dict[str, tiktoken.Encoding]) -> None:
    enc = reference["o200k_base"]

    def n(text: str) -> int:
        return len(enc.encode_ordinary(text))

    one = [{"role": "user", "content": "Hello there"}]
    assert count_tokens(one, "gpt-4o").tokens == 3 + n("user") + n("Hello there") + 3
    named = [{"role": "user", "name": "bob", "content": "Hello there"}]
    assert count_tokens(named, "gpt-4o").tokens == (
        3 + n("user") + n("bob") + 1 + n("Hello there") + 3)


def test_text_parts_count_like_string_content() -> None:
    as_string = [{"role": "user", "content": "Describe the weather in Paris."}]
    as_parts = [{"role": "user", "content": [{"type": "text", "text": "Describe the weather"},
                                             {"type": "text", "text": " in Paris."}]}]
    assert count_tokens(as_parts, "gpt-4o").tokens == count_tokens(as_string, "gpt-4o").tokens
    assert count_tokens(as_parts, "gpt-4o").notes == ()


def test_string_prompt_has_no_chat_framing(reference: dict[str, tiktoken.Encoding]) -> None:
    text = "Write a haiku about observability."
    assert count_tokens(text, "gpt-4o").tokens == len(reference["o200k_base"].encode(text))


def test_tool_calls_in_history_are_counted_and_flagged() -> None:
    plain = [{"role": "assistant", "content": None}]
    with_call = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}]
    base = count_tokens(plain, "gpt-4o")
    result = count_tokens(with_call, "gpt-4o")
    assert result.tokens > base.tokens
    assert any("tool calls" in note for note in result.notes)


@pytest.mark.parametrize("messages", [
    [],
    ["a bare string message"],
    [None, 42, {"role": "user", "content": "hi"}],
    [{"role": "user", "content": 3.5}],
    [{"role": "user", "content": [None, 7, {"type": "input_audio", "input_audio": {}}]}],
    [{"role": "user", "content": [{"type": "image_url"}]}],
    [{"role": "user", "content": {"type": "text", "text": "a single part, not a list"}}],
    [{"role": "user", "audio": {"id": "x"}, "content": "hi"}],
    ({"role": "user", "content": "a tuple of messages"},),
])
@pytest.mark.parametrize("model", ["gpt-4o", "claude-3-5-sonnet", ""])
def test_odd_shapes_never_raise(messages: Any, model: str) -> None:
    result = count_tokens(messages, model)
    assert result.tokens >= 0
    assert result.method in (semconv.METHOD_EXACT, semconv.METHOD_HEURISTIC)


def test_odd_shapes_are_named_in_the_notes() -> None:
    result = count_tokens([None, "loose text", {"role": "user", "content": 3.5}], "gpt-4o")
    assert "message 0 is a NoneType, not an object; skipped" in result.notes
    assert "message 1 is a bare string; counted as content" in result.notes
    assert "content of type float not counted" in result.notes


def test_empty_message_list_is_zero() -> None:
    assert count_tokens([], "gpt-4o").tokens == 0


@pytest.mark.parametrize("prompt", [None, 42, {"role": "user", "content": "hi"}, b"bytes"])
def test_prompt_of_another_type_is_a_value_error(prompt: Any) -> None:
    with pytest.raises(ValueError, match="prompt must be a string or a list of message objects"):
        count_tokens(prompt, "gpt-4o")
