"""The combined verdict: how unusual a part's scores are for benign text of its role.

Instead of flagging a part when any tier passes its own threshold (a union, where each
tier spends part of the 1 % false-alarm budget alone), the tiers' readings of an
untrusted part are combined into one value and one threshold per role. Each reading is
turned into its benign tail: the share of benign training texts of the role scoring at
least as high (word model, encoder), or the share of them a phrase/regex entry fires on
(a hit). The tails are combined as Fisher's method does (the sum of their -log), so two
tiers that both find a text unusual outweigh one that finds it very unusual:

    s = -log tail_word(word) - log tail_encoder(encoder) [- log hit_rate, on a hit]
    value = 1 - exp(-s) * (1 + s)       (Fisher's combined p-value for two tails)

No attack is used to build it: the reference scores are the benign texts of the training
split (scripts/guard_stack.py), the thresholds per role are chosen at <= 1 % false alarms
on realistic benign validation text of the role; both are stored in guard_model.json
(``stack``). A logistic fitted on the training attacks was tried first and did worse
(the encoder's scores of its own training attacks are optimistic: docs/scanning.md).

Contract: :meth:`Stack.value` is pure arithmetic over sorted tables, never raises for
probabilities in [0, 1], any length, any role name (anything not ``tool`` reads as user);
:func:`from_manifest` returns None when the manifest has no usable ``stack`` section
(the caller falls back to the union rule).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FORMAT = "benign-tails/1"


@dataclass(frozen=True, slots=True)
class Reference:
    """One role's benign training scores (sorted) and its phrase/regex hit rate."""

    word: tuple[float, ...]
    encoder: tuple[float, ...]
    hit_rate: float

    def statistic(self, word: float, encoder: float, hit: bool) -> float:
        s = -math.log(_tail(self.word, word)) - math.log(_tail(self.encoder, encoder))
        return s - math.log(self.hit_rate) if hit else s


def _tail(ref: Sequence[float], x: float) -> float:
    """Share of ``ref`` at or above ``x``, smoothed: (count + 1) / (n + 1)."""
    return (len(ref) - bisect_left(ref, x) + 1) / (len(ref) + 1)


def combined(s: float) -> float:
    """1 - Fisher's combined p-value of two tails whose -log sum is ``s``."""
    return 1.0 - math.exp(-s) * (1.0 + s)


@dataclass(frozen=True, slots=True)
class Stack:
    """Benign references per role (user covers unknown-role text) and thresholds."""

    references: Mapping[str, Reference]
    thresholds: Mapping[str, float]

    def value(self, role: str, word: float, encoder: float, hit: bool) -> float:
        ref = self.references["tool" if role == "tool" else "user"]
        return combined(ref.statistic(word, encoder, hit))


def from_manifest(manifest: Mapping[str, Any]) -> Stack | None:
    """The ``stack`` section of guard_model.json, or None when absent or malformed."""
    section = manifest.get("stack")
    if not isinstance(section, Mapping) or section.get("format") != FORMAT:
        return None
    try:
        refs = {r: Reference(_sorted(section["reference"][r]["word"]),
                             _sorted(section["reference"][r]["encoder"]),
                             float(section["reference"][r]["hit_rate"]))
                for r in ("user", "tool")}
        thresholds = {r: float(section["thresholds"][r]) for r in ("user", "tool")}
    except (KeyError, TypeError, ValueError):
        return None
    if not all(0.0 < ref.hit_rate <= 1.0 and ref.word and ref.encoder for ref in refs.values()):
        return None
    return Stack(refs, thresholds)


def _sorted(values: Any) -> tuple[float, ...]:
    return tuple(sorted(float(v) for v in values))
