"""Cohere chat: v2 (``/v2/chat``) and v1 (``/v1/chat``) responses and stream events.

Shapes: https://docs.cohere.com/reference/chat and .../chat-stream (v2 events
``message-start``, ``content-delta``, ``message-end``; v1 ``text-generation``,
``stream-end``). Billed units are what Cohere charges for, so they win over ``tokens``.
"""

from __future__ import annotations

from typing import Any

from llm_observe.instrument.extract._common import Outcome, as_int, content_text, get


def _usage(data: Any, out: Outcome) -> None:
    counts = get(data, "billed_units") or get(data, "tokens")
    if counts is not None:
        out.prompt_tokens = as_int(get(counts, "input_tokens"))
        out.completion_tokens = as_int(get(counts, "output_tokens"))


def apply(data: Any, out: Outcome) -> None:
    """Fold a whole chat response (v1 or v2) into ``out``."""
    out.response_id = get(data, "id") or get(data, "response_id")
    out.finish_reason = get(data, "finish_reason")
    message = get(data, "message")
    if message is not None:
        out.text_parts.append(content_text(get(message, "content")))
    elif isinstance(get(data, "text"), str):
        out.text_parts.append(get(data, "text"))
    found = get(data, "usage") or get(data, "meta")
    if found is not None:
        _usage(found, out)


class ChunkAccumulator:
    __slots__ = ("outcome",)

    def __init__(self) -> None:
        self.outcome = Outcome()

    def add(self, event: Any) -> None:
        out = self.outcome
        kind = get(event, "type") or get(event, "event_type")
        if kind == "content-delta":
            text = get(get(get(get(event, "delta"), "message"), "content"), "text")
            if isinstance(text, str):
                out.text_parts.append(text)
        elif kind == "text-generation":
            out.text_parts.append(get(event, "text") or "")
        elif kind == "message-start":
            out.response_id = get(event, "id")
        elif kind == "message-end":
            delta = get(event, "delta")
            out.finish_reason = get(delta, "finish_reason")
            found = get(delta, "usage")
            if found is not None:
                _usage(found, out)
        elif kind == "stream-end":
            out.finish_reason = get(event, "finish_reason")
            found = get(get(event, "response"), "meta")
            if found is not None:
                _usage(found, out)
