"""Ollama native API: ``/api/chat`` and ``/api/generate`` JSON and NDJSON streams.

Shape: https://github.com/ollama/ollama/blob/main/docs/api.md — every streamed line
is an object; the last has ``done: true`` with ``prompt_eval_count`` (input tokens),
``eval_count`` (output tokens) and ``done_reason``. One ``apply`` serves both.
"""

from __future__ import annotations

from typing import Any

from llm_observe.instrument.extract._common import Outcome, as_int, get


def apply(data: Any, out: Outcome) -> None:
    """Fold one response object (whole, or one NDJSON stream line) into ``out``."""
    out.response_model = get(data, "model") or out.response_model
    message = get(data, "message")
    text = get(message, "content") if message is not None else get(data, "response")
    if isinstance(text, str) and text:
        out.text_parts.append(text)
    if get(data, "done"):
        out.finish_reason = get(data, "done_reason") or "stop"
        out.prompt_tokens = as_int(get(data, "prompt_eval_count"))
        out.completion_tokens = as_int(get(data, "eval_count"))


class ChunkAccumulator:
    __slots__ = ("outcome",)

    def __init__(self) -> None:
        self.outcome = Outcome()

    def add(self, line: Any) -> None:
        apply(line, self.outcome)
