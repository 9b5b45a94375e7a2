"""Prompt hash and MiniLM embedding for sampled spans (spec 3: sampling state).

A sampled span (``is_sampled``, set by the sampling processor that runs before this one) gets
``prompt_hash``, the SHA-256 hex of its prompt text (to group repeated prompts), and
``embedding``, its 384-d all-MiniLM-L6-v2 vector. An unsampled span gets neither: no hashing
and no model work is spent on it. All sampled prompts of a pipeline batch are embedded in one
``Embedder.embed_batch`` call (identical prompts once). The processor is ``blocking``: the
pipeline runs it in an executor thread, so the event loop keeps serving while onnxruntime
works.

While the model is still warming up (or failed to load), sampled spans get their hash but no
embedding and are counted in ``stats.not_ready``: the pipeline never waits for the model.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm_observe.embedding.embedder import EmbedderNotReady
from llm_observe.span import LlmSpan

if TYPE_CHECKING:
    from llm_observe.embedding.embedder import Embedder


@dataclass(slots=True)
class EmbeddingStats:
    """Counters for the self-metrics exporter."""

    hashed: int = 0       # sampled spans that got a prompt hash
    embedded: int = 0     # sampled spans that got an embedding
    not_ready: int = 0    # sampled spans left without an embedding: model not ready
    no_prompt: int = 0    # sampled spans without prompt text: nothing to hash or embed


def prompt_hash(text: str) -> str:
    """SHA-256 hex digest of the prompt's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingProcessor:
    """Processor ``embedding`` (blocking): hash + embed the prompt text of sampled spans."""

    name = "embedding"
    blocking = True

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.stats = EmbeddingStats()

    def process(self, batch: list[LlmSpan]) -> None:
        """Enrich sampled spans in place; unsampled spans are not touched."""
        pending: dict[str, list[LlmSpan]] = {}  # hash -> spans with that prompt
        texts: dict[str, str] = {}
        for span in batch:
            if not span.is_sampled:
                continue
            if span.prompt_text is None:
                self.stats.no_prompt += 1
                continue
            digest = prompt_hash(span.prompt_text)
            span.prompt_hash = digest
            self.stats.hashed += 1
            pending.setdefault(digest, []).append(span)
            texts.setdefault(digest, span.prompt_text)
        if not pending:
            return
        waiting = sum(len(spans) for spans in pending.values())
        if not self.embedder.ready:
            self.stats.not_ready += waiting
            return
        digests = list(pending)
        try:
            vectors = self.embedder.embed_batch([texts[d] for d in digests])
        except EmbedderNotReady:
            self.stats.not_ready += waiting
            return
        for digest, vector in zip(digests, vectors, strict=True):
            for span in pending[digest]:
                # Each span owns its list: exporters may mutate or serialise them separately.
                span.embedding = list(vector)
        self.stats.embedded += waiting
