"""The phrase tries: every occurrence of every key in a folded text, in one C-level call.

Two engines, the same matches (tests/scan/test_trie_engines.py):

- ``ahocorasick_rs`` (Rust, a DFA; the ``ahocorasick-rs`` wheel) when installed: one call
  returns every overlapping match as ``(key, start, end)`` — ~7k instructions a
  ~170-character text against ~11k for pyahocorasick's iterator (``bench.stages``);
- ``pyahocorasick`` otherwise, and for a text the Rust engine cannot take (a lone
  surrogate cannot be encoded as UTF-8). pyahocorasick finds a node's child by a linear
  search over its children, kept in the order they were first added; keys added in
  English letter-frequency order put the likeliest next letter first at every node
  (~9% fewer instructions per text than the patterns file's order).

The scanner keeps two tries: every key, and for PII-only scans the keys that are PII
phrases or gate a PII regex.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ahocorasick

_rs: Any
try:
    import ahocorasick_rs as _rs
except ImportError:  # no wheel for this platform: pyahocorasick alone, same matches
    _rs = None

_FREQUENT = {ch: rank for rank, ch in enumerate(" etaoinshrdlcumwfgypbvkjxqz")}
Match = tuple[int, int, int]  # (key index, start, end exclusive), in characters


def _order(item: tuple[int, str]) -> list[int]:
    return [_FREQUENT.get(ch, 100 + ord(ch)) for ch in item[1]]


class Trie:
    """Keys and their values; :meth:`find` lists every occurrence (overlapping) of every
    key in a text. Immutable after construction (the fallback automaton is built once,
    on first need: a race builds it twice, harmlessly); share freely."""

    __slots__ = ("_automaton", "_fast", "keys", "values")

    def __init__(self, values: Sequence[tuple[str, Any]], fast: bool = True) -> None:
        self.keys = [key for key, _ in values]
        self.values = [value for _, value in values]
        self._fast = (_rs.AhoCorasick(self.keys, matchkind=_rs.MatchKind.Standard,
                                      implementation=_rs.Implementation.DFA)
                      if fast and _rs is not None else None)
        self._automaton: ahocorasick.Automaton | None = (
            None if self._fast is not None else self._build())

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, text: str) -> list[Match]:
        """``(key index, start, end)`` of every occurrence of a key in ``text``."""
        if self._fast is not None:
            try:
                found: list[Match] = self._fast.find_matches_as_indexes(text, overlapping=True)
                return found
            except UnicodeEncodeError:  # a lone surrogate: the other engine takes it
                pass
        automaton = self._automaton
        if automaton is None:
            automaton = self._automaton = self._build()
        keys = self.keys
        return [(i, end - len(keys[i]) + 1, end + 1) for end, i in automaton.iter(text)]

    def _build(self) -> ahocorasick.Automaton:
        automaton = ahocorasick.Automaton()
        for i, key in sorted(enumerate(self.keys), key=_order):
            automaton.add_word(key, i)
        automaton.make_automaton()
        return automaton


def build(values: Sequence[tuple[str, Any]]) -> Trie | None:
    """A :class:`Trie` of ``(key, value)`` pairs; None when there are none."""
    return Trie(values) if values else None
