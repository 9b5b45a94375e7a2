"""Anthropic Messages API: responses and the SSE event stream.

Shapes: https://docs.anthropic.com/en/api/messages and .../messages-streaming.
Mapping (spec 2.2): input_tokens -> prompt_tokens, output_tokens -> completion_tokens,
stop_reason -> finish_reason. Cache reads/writes are billed beside input_tokens, so
prompt_tokens is their sum (span.py's token convention).
"""

from __future__ import annotations

from typing import Any

from llm_observe.instrument.extract._common import Outcome, Request, as_int, content_text, get


def request(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request:
    """(model, prompt messages incl. system, streaming) of ``messages.create``."""
    model = kwargs.get("model")
    messages = kwargs.get("messages")
    system = kwargs.get("system")
    if system and isinstance(system, (str, list)):
        messages = [{"role": "system", "content": content_text(system)}, *(messages or ())]
    streaming = kwargs.get("stream") is True
    return Request(model if isinstance(model, str) else None, messages, streaming)


def usage(data: Any, out: Outcome) -> None:
    base = as_int(get(data, "input_tokens"))
    read = as_int(get(data, "cache_read_input_tokens")) or 0
    write = as_int(get(data, "cache_creation_input_tokens")) or 0
    if base is not None:
        out.prompt_tokens = base + read + write
        out.cache_read = read or None
        out.cache_write = write or None
    # cache writes by TTL (usage.cache_creation, Anthropic prompt-caching docs) and the
    # tier the request ran on (usage.service_tier: standard, priority, batch)
    by_ttl = get(data, "cache_creation")
    if by_ttl is not None:
        out.detail("cache_write_1h_tokens", as_int(get(by_ttl, "ephemeral_1h_input_tokens")))
    out.detail("service_tier", get(data, "service_tier"))


def response(data: Any, out: Outcome) -> None:
    """Fill ``out`` from a Message (SDK object or JSON dict)."""
    out.response_model = get(data, "model")
    out.response_id = get(data, "id")
    found = get(data, "usage")
    if found is not None:
        usage(found, out)
        out.completion_tokens = as_int(get(found, "output_tokens"))
    out.finish_reason = get(data, "stop_reason")
    for block in get(data, "content") or ():
        if get(block, "type") == "text":
            out.text_parts.append(get(block, "text") or "")


class EventAccumulator:
    """Folds raw stream events (message_start ... message_stop) into an Outcome."""

    __slots__ = ("outcome",)

    def __init__(self) -> None:
        self.outcome = Outcome()

    def add(self, event: Any) -> None:
        kind = get(event, "type")
        out = self.outcome
        if kind == "content_block_delta":
            delta = get(event, "delta")
            if get(delta, "type") == "text_delta":
                out.text_parts.append(get(delta, "text") or "")
        elif kind == "message_start":
            message = get(event, "message")
            out.response_model = get(message, "model")
            out.response_id = get(message, "id")
            found = get(message, "usage")
            if found is not None:
                # output_tokens here is a placeholder; message_delta carries the count.
                usage(found, out)
        elif kind == "message_delta":
            reason = get(get(event, "delta"), "stop_reason")
            if reason:
                out.finish_reason = reason
            found = get(event, "usage")
            if found is not None:
                out.completion_tokens = as_int(get(found, "output_tokens"))
                if get(found, "input_tokens") is not None:
                    usage(found, out)
