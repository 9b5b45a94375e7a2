"""Gemini API / Vertex AI ``generateContent`` JSON and ``streamGenerateContent`` chunks.

Shape: https://ai.google.dev/api/generate-content#generatecontentresponse. Every stream
chunk is a GenerateContentResponse whose ``usageMetadata`` is cumulative, so the same
``apply`` folds a whole response or one chunk. Output tokens include thinking tokens
(``thoughtsTokenCount``), which Google bills as output.
"""

from __future__ import annotations

from typing import Any

from llm_observe.instrument.extract._common import Outcome, as_int, get


def apply(data: Any, out: Outcome) -> None:
    """Fold one GenerateContentResponse (whole or a stream chunk) into ``out``."""
    out.response_model = get(data, "modelVersion") or out.response_model
    out.response_id = get(data, "responseId") or out.response_id
    found = get(data, "usageMetadata")
    if found is not None:
        out.prompt_tokens = as_int(get(found, "promptTokenCount"))
        candidates = as_int(get(found, "candidatesTokenCount"))
        thoughts = as_int(get(found, "thoughtsTokenCount")) or 0
        out.completion_tokens = None if candidates is None else candidates + thoughts
        out.cache_read = as_int(get(found, "cachedContentTokenCount"))
    for candidate in get(data, "candidates") or ():
        reason = get(candidate, "finishReason")
        if reason:
            out.finish_reason = reason
        for part in get(get(candidate, "content"), "parts") or ():
            text = get(part, "text")
            if isinstance(text, str) and not get(part, "thought"):
                out.text_parts.append(text)


class ChunkAccumulator:
    __slots__ = ("outcome",)

    def __init__(self) -> None:
        self.outcome = Outcome()

    def add(self, chunk: Any) -> None:
        apply(chunk, self.outcome)
