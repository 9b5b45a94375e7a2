"""Amazon Bedrock runtime: Converse responses and the invoke token-count headers.

Shapes: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
(``output.message.content[].text``, ``stopReason``, ``usage.inputTokens`` /
``outputTokens`` / ``cacheReadInputTokens`` / ``cacheWriteInputTokens``). InvokeModel
answers in the model family's own format but reports counts in the
``x-amzn-bedrock-input-token-count`` / ``-output-token-count`` headers. Streams use
AWS's binary event-stream encoding, which is not decoded here: streamed Bedrock calls
made without an SDK patch get latency, TTFT and locally counted tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_observe.instrument.extract._common import Outcome, as_int, get


def apply(data: Any, out: Outcome) -> None:
    """Fold a Converse response into ``out``."""
    out.finish_reason = get(data, "stopReason")
    message = get(get(data, "output"), "message")
    for block in get(message, "content") or ():
        text = get(block, "text")
        if isinstance(text, str):
            out.text_parts.append(text)
    found = get(data, "usage")
    if found is not None:
        base = as_int(get(found, "inputTokens"))
        read = as_int(get(found, "cacheReadInputTokens")) or 0
        write = as_int(get(found, "cacheWriteInputTokens")) or 0
        if base is not None:
            out.prompt_tokens = base + read + write
        out.completion_tokens = as_int(get(found, "outputTokens"))
        out.cache_read = read or None
        out.cache_write = write or None


def apply_headers(headers: Mapping[str, str], out: Outcome) -> None:
    """Token counts from InvokeModel's response headers, when the body gave none."""
    if out.prompt_tokens is None:
        value = headers.get("x-amzn-bedrock-input-token-count")
        out.prompt_tokens = int(value) if value and value.isdigit() else None
    if out.completion_tokens is None:
        value = headers.get("x-amzn-bedrock-output-token-count")
        out.completion_tokens = int(value) if value and value.isdigit() else None
