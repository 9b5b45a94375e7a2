"""Models seen without a price since start, with counts: :class:`UnpricedTracker`.

Fed by the cost step for every unpriced span and read by ``GET /v1/pricing/models``, so
the unpriced signal (``llm_observe_unpriced_spans_total``) can be acted on: which name,
which provider, how often. Memory is bounded: at most ``max_names`` distinct (model,
provider) pairs are kept, names are cut to ``MAX_NAME_CHARS``; spans of further pairs
are counted as overflow. Thread-safe: the chain runs on the pipeline's worker thread
while the API reads on the event loop.
"""

from __future__ import annotations

import threading
from typing import Any

MAX_NAMES = 1_000
MAX_NAME_CHARS = 200


class UnpricedTracker:
    """Bounded counts of unpriced spans per (model, provider)."""

    def __init__(self, max_names: int = MAX_NAMES) -> None:
        self.max_names = max_names
        self._counts: dict[tuple[str, str], int] = {}
        self._overflow_spans = 0
        self._overflow_names: set[tuple[str, str]] = set()  # only up to max_names of them
        self._lock = threading.Lock()

    def record(self, model: str, provider: str) -> bool:
        """Count one unpriced span; True the first time this pair is seen (and kept)."""
        key = (model[:MAX_NAME_CHARS], provider[:MAX_NAME_CHARS])
        with self._lock:
            count = self._counts.get(key)
            if count is not None:
                self._counts[key] = count + 1
                return False
            if len(self._counts) < self.max_names:
                self._counts[key] = 1
                return True
            self._overflow_spans += 1
            if len(self._overflow_names) < self.max_names:
                self._overflow_names.add(key)
            return False

    def snapshot(self) -> dict[str, Any]:
        """``{models: [{model, provider, count}], ...}``, most frequent first."""
        with self._lock:
            counts = list(self._counts.items())
            overflow, overflow_names = self._overflow_spans, len(self._overflow_names)
        counts.sort(key=lambda item: (-item[1], item[0]))
        return {
            "models": [{"model": m, "provider": p, "count": c} for (m, p), c in counts],
            "distinct_models": len(counts),
            "total_spans": sum(c for _, c in counts) + overflow,
            "max_models": self.max_names,
            "overflow_spans": overflow,
            "overflow_models_at_least": overflow_names,
        }
