"""Bounded, renderable label values, so a bad client cannot explode or break the exposition.

Three defences, each applied where a new label value or label set first appears (never
on the cached per-span path):

- :func:`clean_label` makes a value encodable: a lone surrogate (it cannot be UTF-8
  encoded, and one made ``generate_latest`` raise on every scrape) and every C0/C1
  control character become U+FFFD, visibly, rather than vanishing and silently merging
  ``"gpt-4o\\x00"`` into ``"gpt-4o"``;
- :class:`LabelGuard` caps one label's distinct values and cuts them at MAX_LABEL_CHARS;
- :class:`LabelBudget` caps the label sets of one metric family, in units of UNIT_BYTES
  of label values as exposed, so the exposition is bounded in series *and* bytes.
"""

from __future__ import annotations

from collections.abc import Callable

OVERFLOW = "__overflow__"
MAX_LABEL_CHARS = 128
# One budget unit: a label set whose caller-given values take up to this many bytes in
# the exposition costs 1; longer values cost one more unit per started UNIT_BYTES.
UNIT_BYTES = 128
REPLACEMENT = "\ufffd"


def _unrenderable(char: str) -> bool:
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF


def clean_label(value: str) -> str:
    """``value`` with lone surrogates and C0/C1 control characters replaced by U+FFFD."""
    if value.isprintable():  # the common case: one C-level pass, no copy
        return value
    return "".join(REPLACEMENT if _unrenderable(c) else c for c in value)


def label_units(*values: str) -> int:
    """Budget units of one label set: 1 per started UNIT_BYTES of its values, as exposed.

    Counts UTF-8 bytes plus the escape added before each backslash and double quote.
    """
    size = sum(len(v.encode("utf-8")) + v.count("\\") + v.count('"') for v in values)
    return max(1, -(-size // UNIT_BYTES))


class LabelGuard:
    """Caps one label's distinct values; values past the cap become ``__overflow__``.

    Values are cleaned (:func:`clean_label`) and cut to MAX_LABEL_CHARS; ``on_overflow``
    is called for each value turned away (the exporters count it). Not thread-safe: used
    from the collector's event-loop thread only.
    """

    __slots__ = ("limit", "on_overflow", "overflowed", "seen")

    def __init__(self, limit: int, on_overflow: Callable[[], object] | None = None) -> None:
        self.limit = limit
        self.on_overflow = on_overflow
        self.seen: set[str] = set()  # clean values only
        self.overflowed = 0

    def __call__(self, value: str | None) -> str:
        if not value:
            return "unknown"
        if value in self.seen:
            return value
        value = clean_label(value)[:MAX_LABEL_CHARS]
        if value in self.seen:
            return value
        if len(self.seen) >= self.limit:
            self.overflowed += 1
            if self.on_overflow is not None:
                self.on_overflow()
            return OVERFLOW
        self.seen.add(value)
        return value


class LabelBudget:
    """Label-set units one metric family may still take; never given back (no eviction)."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def take(self, units: int) -> bool:
        """Take ``units`` if they fit; False (nothing taken) when the family is full."""
        if units > self.left:
            return False
        self.left -= units
        return True
