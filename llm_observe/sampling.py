"""The deterministic 1% sampling gate (spec 4.9, ARCHITECTURE "Decisions").

A leaf module: the app side (``@observe``) and the pipeline (``processors.sampling``)
both decide with it, so a span is sampled the same way wherever it is decided.
"""

from __future__ import annotations

import hashlib

SAMPLING_MODULUS = 100


def should_sample(span_id: str) -> bool:
    """True for 1% of span ids: int(sha256(span_id)) % 100 == 0. Same id, same answer."""
    digest = hashlib.sha256(span_id.encode("utf-8")).digest()
    # The integer value of the whole digest mod 100 equals the spec's
    # int(hexdigest, 16) % 100; from_bytes skips the hex round trip.
    return int.from_bytes(digest, "big") % SAMPLING_MODULUS == 0
