"""The embedding budget's parts: a token bucket, and what one prompt costs in its tokens.

The same bucket also keeps the model-time budget, in seconds: ``spend`` charges a run's
measured duration after the fact and may leave the bucket in debt until it refills.

A bucket token is one *embedding unit*: one prompt of up to ``unit_tokens`` model tokens
(32 by default). Model time grows with the tokens of a prompt (measured on the 2-core dev box
under load: ~4 ms for 8 tokens, ~11 ms for 32, ~98 ms for 256), so a longer prompt costs
``ceil(tokens / unit_tokens)`` units, at most the 256-token window's 8: a sender of long
prompts gets as much model time from the budget as a sender of short ones, not 25 times more.
The clock is injectable (``time.monotonic`` by default) so tests can step time.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

WINDOW_TOKENS = 256  # the model's window (embedding/tokenizer.py): no prompt costs more
# Past this many characters a prompt of most text fills (or all but fills) the window (~4
# characters a token in English, fewer in code and most scripts, 1/3 in Korean): charged the
# whole window without tokenizing.
LONG_CHARS = 1024


class TokenBucket:
    """``rate`` units a second, at most ``capacity`` banked (the burst); starts full.
    Not thread-safe: a caller that shares one across threads holds a lock."""

    def __init__(self, rate: float, capacity: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0:
            raise ValueError("rate must be > 0")
        if not capacity > 0:
            raise ValueError("capacity must be > 0")
        self.rate = float(rate)
        self.capacity = float(capacity)
        self._clock = clock
        self._level = self.capacity
        self._last = clock()

    @property
    def level(self) -> float:
        """Tokens banked right now (after refilling up to the clock's present)."""
        self._refill()
        return self._level

    def try_take(self, n: int, keep: float = 0.0) -> bool:
        """Take exactly ``n`` tokens if that leaves at least ``keep``; else take none."""
        self._refill()
        if self._level - n < keep:
            return False
        self._level -= n
        return True

    def spend(self, amount: float) -> None:
        """Charge ``amount`` after the fact; the level may go below zero (a debt)."""
        self._refill()
        self._level -= amount

    def put_back(self, n: int) -> None:
        """Return tokens that were taken but not spent (never above ``capacity``)."""
        if n > 0:
            self._level = min(self.capacity, self._level + n)

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._last
        if elapsed > 0:  # a clock that steps back neither drains nor refills the bucket
            self._level = min(self.capacity, self._level + elapsed * self.rate)
            self._last = now


class PromptCost:
    """Embedding units of a prompt: ``ceil(tokens / unit_tokens)``, from 1 to ``max_units``.

    ``count_tokens`` counts a text's model tokens ([CLS] and [SEP] included); by default the
    model's own tokenizer, loaded on first use (the same files the embedder loads).
    """

    def __init__(self, unit_tokens: int = 32,
                 count_tokens: Callable[[str], int] | None = None) -> None:
        if not 1 <= unit_tokens <= WINDOW_TOKENS:
            raise ValueError(f"unit_tokens must be between 1 and {WINDOW_TOKENS}")
        self.unit_tokens = unit_tokens
        self.max_units = math.ceil(WINDOW_TOKENS / unit_tokens)
        self._count = count_tokens

    def __call__(self, text: str) -> int:
        if len(text) > LONG_CHARS:
            return self.max_units
        if self._count is None:
            self._count = _model_token_counter()
        units = math.ceil(self._count(text) / self.unit_tokens)
        return min(self.max_units, max(1, units))


def _model_token_counter() -> Callable[[str], int]:
    """The model tokenizer's count; if it cannot load (then neither can the model), every
    prompt is charged the whole window, so the budget still holds."""
    try:
        from llm_observe.embedding.tokenizer import load_tokenizer
        from llm_observe.embedding.weights import locate

        files = locate()
        tokenizer = load_tokenizer(files, files.config().max_seq_length)
    except Exception as exc:  # the embedder reports load failures; the budget must not fail
        log.warning("embedding budget: tokenizer unavailable (%s); charging the window", exc)
        return lambda text: WINDOW_TOKENS
    return lambda text: len(tokenizer.encode(text).ids)
