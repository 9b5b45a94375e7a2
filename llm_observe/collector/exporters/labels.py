"""Bounded label values, so a bad client cannot explode series cardinality."""

from __future__ import annotations

OVERFLOW = "__overflow__"
MAX_LABEL_CHARS = 128


class LabelGuard:
    """Caps one label's distinct values; values past the cap become ``__overflow__``.

    Values are also truncated to MAX_LABEL_CHARS. Not thread-safe: used from the
    collector's event-loop thread only.
    """

    __slots__ = ("limit", "overflowed", "seen")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: set[str] = set()
        self.overflowed = 0

    def __call__(self, value: str | None) -> str:
        if not value:
            return "unknown"
        if value in self.seen:
            return value
        if len(value) > MAX_LABEL_CHARS:
            value = value[:MAX_LABEL_CHARS]
            if value in self.seen:
                return value
        if len(self.seen) >= self.limit:
            self.overflowed += 1
            return OVERFLOW
        self.seen.add(value)
        return value
