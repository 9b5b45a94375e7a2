"""The deterministic 1% sampling gate (spec 4.9, ARCHITECTURE "Decisions")."""

from __future__ import annotations

import hashlib

from llm_observe.span import LlmSpan

SAMPLING_MODULUS = 100


def should_sample(span_id: str) -> bool:
    """True for 1% of span ids: int(sha256(span_id)) % 100 == 0. Same id, same answer."""
    digest = hashlib.sha256(span_id.encode("utf-8")).digest()
    # The integer value of the whole digest mod 100 equals the spec's
    # int(hexdigest, 16) % 100; from_bytes skips the hex round trip.
    return int.from_bytes(digest, "big") % SAMPLING_MODULUS == 0


class SamplingProcessor:
    """Sets ``is_sampled``; spans already marked sampled by their sender stay sampled."""

    name = "sampling"
    blocking = False

    def process(self, batch: list[LlmSpan]) -> None:
        for span in batch:
            if not span.is_sampled:
                span.is_sampled = should_sample(span.span_id)
