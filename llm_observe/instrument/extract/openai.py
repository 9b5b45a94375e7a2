"""OpenAI chat completions (and every OpenAI-compatible API, LiteLLM's responses too).

Shapes: https://platform.openai.com/docs/api-reference/chat/object and
.../chat-streaming (chunk ``choices[].delta.content``; usage only in a final chunk
with empty ``choices`` when ``stream_options.include_usage`` is set).
"""

from __future__ import annotations

from typing import Any

from llm_observe.instrument.extract._common import Outcome, Request, as_int, content_text, get


def request(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request:
    """(model, prompt messages, streaming) of a ``chat.completions.create`` call."""
    model = kwargs.get("model")
    return Request(model if isinstance(model, str) else None, kwargs.get("messages"),
                   kwargs.get("stream") is True)


def usage(data: Any, out: Outcome) -> None:
    out.prompt_tokens = as_int(get(data, "prompt_tokens"))
    out.completion_tokens = as_int(get(data, "completion_tokens"))
    details = get(data, "prompt_tokens_details")
    if details is not None:
        # OpenAI counts cached tokens inside prompt_tokens (span.py's convention too).
        out.cache_read = as_int(get(details, "cached_tokens"))
        out.detail("audio_input_tokens", as_int(get(details, "audio_tokens")))
    _output_details(get(data, "completion_tokens_details"), out, get)


def _output_details(details: Any, out: Outcome, read: Any) -> None:
    """Reasoning and audio tokens: parts of completion_tokens (OpenAI API reference,
    ``usage.completion_tokens_details``)."""
    if details is not None:
        out.detail("reasoning_tokens", as_int(read(details, "reasoning_tokens")))
        out.detail("audio_output_tokens", as_int(read(details, "audio_tokens")))


def response(data: Any, out: Outcome) -> None:
    """Fill ``out`` from a ChatCompletion (SDK object or JSON dict)."""
    if type(data) is not dict and hasattr(data, "choices"):
        _response_object(data, out)
        return
    out.response_model = get(data, "model")
    out.response_id = get(data, "id")
    out.detail("service_tier", get(data, "service_tier"))  # flex, priority, default, scale
    found = get(data, "usage")
    if found is not None:
        usage(found, out)
    for choice in get(data, "choices") or ():
        finish = get(choice, "finish_reason")
        if finish:
            out.finish_reason = finish
        message = get(choice, "message")
        if message is not None:
            text = content_text(get(message, "content"))
            if text:
                out.text_parts.append(text)


def _response_object(data: Any, out: Outcome) -> None:
    # SDK objects (openai, LiteLLM): plain attribute access, the per-call hot path.
    out.response_model = getattr(data, "model", None)
    out.response_id = getattr(data, "id", None)
    out.detail("service_tier", getattr(data, "service_tier", None))
    found = getattr(data, "usage", None)
    if found is not None:
        out.prompt_tokens = as_int(getattr(found, "prompt_tokens", None))
        out.completion_tokens = as_int(getattr(found, "completion_tokens", None))
        details = getattr(found, "prompt_tokens_details", None)
        if details is not None:
            out.cache_read = as_int(getattr(details, "cached_tokens", None))
            out.detail("audio_input_tokens", as_int(getattr(details, "audio_tokens", None)))
        _output_details(getattr(found, "completion_tokens_details", None), out, _attr)
    for choice in data.choices or ():
        finish = getattr(choice, "finish_reason", None)
        if finish:
            out.finish_reason = finish
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        if isinstance(content, str):
            out.text_parts.append(content)
        elif content:
            out.text_parts.append(content_text(content))


class ChunkAccumulator:
    """Folds ``chat.completion.chunk`` items into an Outcome."""

    __slots__ = ("outcome",)

    def __init__(self) -> None:
        self.outcome = Outcome()

    def add(self, chunk: Any) -> None:
        if type(chunk) is dict:
            self.add_dict(chunk)
            return
        # SDK objects (openai, LiteLLM): plain attribute access, the per-chunk hot path.
        out = self.outcome
        if out.response_model is None:
            out.response_model = getattr(chunk, "model", None)
            out.response_id = getattr(chunk, "id", None)
        for choice in getattr(chunk, "choices", None) or ():
            delta = choice.delta
            if delta is not None:
                content = delta.content
                if content:
                    out.text_parts.append(content)
            if choice.finish_reason:
                out.finish_reason = choice.finish_reason
        found = getattr(chunk, "usage", None)
        if found is not None:
            usage(found, out)

    def add_dict(self, chunk: dict[str, Any]) -> None:
        """The same for a chunk parsed from raw SSE JSON (the HTTP catch-all)."""
        out = self.outcome
        if out.response_model is None:
            out.response_model = chunk.get("model")
            out.response_id = chunk.get("id")
        for choice in chunk.get("choices") or ():
            content = (choice.get("delta") or {}).get("content")
            if content:
                out.text_parts.append(content)
            if choice.get("finish_reason"):
                out.finish_reason = choice["finish_reason"]
        found = chunk.get("usage")
        if found is not None:
            usage(found, out)


def _attr(obj: Any, name: str) -> Any:
    return getattr(obj, name, None)
