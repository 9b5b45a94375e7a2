"""Case- and whitespace-folding with a map back to the original offsets.

Phrases are matched on a folded copy of the text (lowercase, every whitespace run
collapsed to one space, invisible characters dropped) so that "Ignore   PREVIOUS\n
instructions" and "ig\u200bnore previous instructions" are found. Findings must point
into the text the caller gave, so the fold keeps a compact offset map: a list of
breakpoints where the distance between the two texts changes, searched with bisect.
The common case (single spaces, printable characters) costs one lower() and one
isprintable() and needs no map at all.
"""

from __future__ import annotations

import re
from bisect import bisect_right

# Zero-width space/joiners, word joiner, BOM and soft hyphen render as nothing and are
# a known way to split a phrase so substring filters miss it.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_INVISIBLE_SET = frozenset(_INVISIBLE)
# Breakpoint list of an unchanged text; shared, never mutated.
_ORIGIN = [0]
# Only the spots that need rewriting: runs of 2+ whitespace/invisible characters, a
# single whitespace character that is not a plain space, or a single invisible one.
_SQUEEZE = re.compile(rf"[\s{_INVISIBLE}]{{2,}}|[^\S ]|[{_INVISIBLE}]")
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))
# Printable ASCII but the digits: deleting these from a printable text leaves its digits.
_PRINTABLE_NOT_DIGITS = bytes(b for b in range(0x20, 0x7F) if not 0x30 <= b <= 0x39)


class Folded:
    """A folded text plus the map from its offsets to the original's."""

    __slots__ = ("_norm_starts", "_orig_starts", "text")

    def __init__(self, text: str, norm_starts: list[int], orig_starts: list[int]) -> None:
        self.text = text
        self._norm_starts = norm_starts
        self._orig_starts = orig_starts

    def to_original(self, pos: int) -> int:
        """Original offset of the folded character at ``pos``."""
        k = bisect_right(self._norm_starts, pos) - 1
        return self._orig_starts[k] + pos - self._norm_starts[k]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Original [start, end) of the folded [start, end) (end is exclusive, end > start)."""
        return self.to_original(start), self.to_original(end - 1) + 1


def same_offsets(text: str) -> str | None:
    """The folded ``text`` when every offset maps to itself (the common case: printable,
    single spaces), else None (then :func:`fold`). No :class:`Folded` is built: the
    scanner's common case skips it (~1.9k instructions a text)."""
    low = text.lower()
    # isprintable() is False for every whitespace but the plain space and for the
    # invisible characters: one C-speed test settles the common case. A few characters
    # lowercase to two code points (e.g. U+0130): such a text takes the slow fold.
    if len(low) == len(text) and _printable(low) and "  " not in low:
        return low
    return None


def plain_ascii(text: str) -> tuple[str, bytes, int] | None:
    """``(folded text, its ASCII bytes, how many digits it holds)`` when ``text`` is
    printable ASCII with single spaces (:func:`same_offsets`' common case, every offset
    its own), else None. One lower, one encode and one byte-level delete answer both
    "printable?" and "how many digits?": the scanner hands the bytes and the count on to
    the digit gate and the word model, which would each encode the text again."""
    if not text.isascii():
        return None
    low = text.lower()
    raw = low.encode("ascii")
    rest = raw.translate(None, _PRINTABLE_NOT_DIGITS)  # the digits and the controls
    if (rest and not rest.isdigit()) or b"  " in raw:
        return None
    return low, raw, len(rest)


def same_span(start: int, end: int) -> tuple[int, int]:
    """:meth:`Folded.span` for a text :func:`same_offsets` folded: the offsets as they are."""
    return start, end


def fold(text: str) -> Folded:
    """Lowercase ``text``, collapse whitespace runs to one space and drop invisible chars."""
    same = same_offsets(text)
    if same is not None:
        return Folded(same, _ORIGIN, _ORIGIN)
    low = text.lower()
    if len(low) != len(text):
        return _fold_slow(text)
    parts: list[str] = []
    norm_starts, orig_starts = [0], [0]
    pos = npos = 0
    for m in _SQUEEZE.finditer(low):
        s, e = m.span()
        parts.append(low[pos:s])
        npos += s - pos
        if not _INVISIBLE_SET.issuperset(m.group()):
            # The single space keeps mapping to the run's first character (same segment).
            parts.append(" ")
            npos += 1
        norm_starts.append(npos)
        orig_starts.append(e)
        pos = e
    parts.append(low[pos:])
    return Folded("".join(parts), norm_starts, orig_starts)


def _printable(low: str) -> bool:
    # In ASCII the non-printable characters are the controls, found by one byte-level
    # delete of every printable byte: ~4x faster than str.isprintable's per-character
    # table lookup, which was half the fold of a long prompt.
    if low.isascii():
        return not low.encode("ascii").translate(None, _PRINTABLE_ASCII)
    return low.isprintable()


def _fold_slow(text: str) -> Folded:
    """Character-by-character fold for texts whose lowercase changes length."""
    out: list[str] = []
    origin: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        if ch in _INVISIBLE_SET:
            continue
        if ch.isspace():
            if not in_space:
                out.append(" ")
                origin.append(i)
            in_space = True
            continue
        in_space = False
        for low in ch.lower():
            out.append(low)
            origin.append(i)
    # One breakpoint per character: correct for any mix of expansions and drops.
    return Folded("".join(out), list(range(len(out))) or [0], origin or [0])
