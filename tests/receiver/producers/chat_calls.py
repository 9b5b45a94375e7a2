"""The calls both SDK apps make: one whole chat completion and one streamed (with usage)."""

from typing import Any


def whole_and_streamed(client: Any) -> tuple[int | None, str]:
    """(prompt tokens of the whole call, text of the streamed one)."""
    whole = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Hello there"}])
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Stream please"}], stream=True,
        stream_options={"include_usage": True})
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    return (whole.usage.prompt_tokens if whole.usage else None), text
