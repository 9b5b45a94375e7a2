"""Local token counts for calls whose provider reported none (streams without usage).

Delegates to ``llm_observe.tokens`` (exact with the model's tiktoken encoding, else a
character heuristic), imported lazily so the patch path never pays for it unless a
count is needed. If that module cannot be imported, a ~4 characters per token estimate
stands in, marked ``heuristic``.
"""

from __future__ import annotations

from typing import Any

from llm_observe import semconv
from llm_observe.instrument.extract._common import as_chat_dicts, flatten_messages


def _fallback(text: str) -> tuple[int, str]:
    return (max(1, round(len(text) / 4)) if text else 0), semconv.METHOD_HEURISTIC


def count_prompt(prompt: Any, model: str) -> tuple[int, str]:
    """(tokens, method) for a prompt: a string or a list of chat messages of any SDK shape."""
    try:
        from llm_observe.tokens import count_tokens
    except ImportError:
        return _fallback(flatten_messages(prompt))
    counted = count_tokens(as_chat_dicts(prompt), model)
    return counted.tokens, counted.method


def count_completion(text: str, model: str) -> tuple[int, str]:
    """(tokens, method) for completion text (no chat framing)."""
    if not text:
        return 0, semconv.METHOD_EXACT
    try:
        from llm_observe.tokens import count_text_tokens
    except ImportError:
        return _fallback(text)
    counted = count_text_tokens(text, model)
    return counted.tokens, counted.method
