"""The encoder's recent verdicts, keyed by the text it read (issue 23: cost).

Apps send the same untrusted text again and again (a retrieved document on every call of
a RAG app, a tool's fixed output, a retried user turn). A text whose verdict is here is
not read again: no model time, no budget spent. Contract:

- the key is a 16-byte BLAKE2b digest of the exact text read (after the tier's length
  cut), so equal texts share a verdict and no text is kept in memory;
- at most ``size`` verdicts, the least recently used dropped first;
- not locked: the caller (GuardTier) holds its own lock around every call.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict


def text_key(text: str) -> bytes:
    """Digest of ``text`` (lone surrogates included: encoded with surrogatepass)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class VerdictCache:
    """LRU map from :func:`text_key` to the encoder's probability."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[bytes, float] = OrderedDict()

    def get(self, key: bytes) -> float | None:
        score = self._items.get(key)
        if score is not None:
            self._items.move_to_end(key)
        return score

    def put(self, key: bytes, score: float) -> None:
        if self.size <= 0:
            return
        self._items[key] = score
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
