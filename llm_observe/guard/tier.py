"""The encoder tier under a budget: which untrusted texts it reads, and what it may spend.

Contract of :meth:`GuardTier.judge` (called from the pipeline's executor thread by
processors/guard.py; thread-safe, never raises for bad text, never blocks on I/O):

- The cheap tiers gate it: the caller passes the word model's probability; below
  ``gate`` the text is not read (most traffic). Only untrusted roles are judged.
- Model work is bounded like the embedding budget (processors/budget.py): ``rate``, a
  token bucket of ``max_windows_per_s`` windows a second (a window is 128 tokens);
  ``busy``, model time at most ``max_busy`` of the wall clock (a bucket of seconds, at
  least 50 ms deep, charged with each run's measured time; a run is admitted while it is
  not in debt, so one run overdraws it at most); ``queue``, at most ``queue_max`` texts
  waiting for or in the model at once. Over budget the text is skipped, counted by
  reason; ``not_ready`` while the model loads (or when it failed to); ``windows``: a text
  longer than ``max_windows`` windows is read on its first ``max_windows`` only (counted,
  still judged).
- A text read recently (the same characters, up to the length cut) gets its cached
  verdict back without a model run or budget (guard/verdicts.py; ``cache_size`` texts,
  counted in ``stats.cached``).
- Returns the probability, or None when the text was not read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from llm_observe.guard.model import WINDOW, GuardModel
from llm_observe.guard.verdicts import VerdictCache, text_key
from llm_observe.processors.budget import TokenBucket

log = logging.getLogger(__name__)

SKIP_REASONS = ("rate", "busy", "queue", "not_ready", "windows")


@dataclass(frozen=True, slots=True)
class GuardConfig:
    """Budget and gate of the encoder tier (``validate`` names the bad field)."""

    gate: float = 0.05            # word-model probability at which the encoder reads a text
    max_windows_per_s: float = 20.0
    max_busy: float = 0.1         # share of the wall clock the model may take
    queue_max: int = 4
    max_windows: int = 8          # windows read per text (the first ones)
    threads: int = 1
    cache_size: int = 4096        # verdicts kept by text digest (0: no cache)

    def validate(self) -> None:
        if not 0.0 <= self.gate < 1.0:
            raise ValueError("gate must be in [0, 1)")
        if not self.max_windows_per_s > 0:
            raise ValueError("max_windows_per_s must be > 0")
        if not 0.0 < self.max_busy <= 1.0:
            raise ValueError("max_busy must be in (0, 1]")
        if self.queue_max < 1:
            raise ValueError("queue_max must be >= 1")
        if self.max_windows < 1:
            raise ValueError("max_windows must be >= 1")
        if self.cache_size < 0:
            raise ValueError("cache_size must be >= 0")


@dataclass(slots=True)
class GuardStats:
    """Counters for the self-metrics (read at scrape time)."""

    judged: int = 0
    flagged: int = 0
    windows: int = 0
    seconds: float = 0.0
    cached: int = 0               # verdicts answered from the cache (no model run)
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SKIP_REASONS, 0))


class GuardTier:
    """The encoder behind its gate and budget; loads the model in a background thread,
    at once (``eager``: the span path) or on first use (scan requests only)."""

    def __init__(self, config: GuardConfig, load: Callable[[], GuardModel],
                 clock: Callable[[], float] = time.monotonic, eager: bool = True) -> None:
        config.validate()
        self.config = config
        self.stats = GuardStats()
        self._rate = TokenBucket(config.max_windows_per_s, max(1.0, config.max_windows_per_s),
                                 clock)
        self._busy = TokenBucket(config.max_busy, max(0.05, config.max_busy), clock)
        self._lock = threading.Lock()     # budget, stats
        self._model_lock = threading.Lock()  # one model run at a time
        self._waiting = 0
        self._verdicts = VerdictCache(config.cache_size)
        self._model: GuardModel | None = None
        self.error: str | None = None
        self._loader = threading.Thread(target=self._load, args=(load,), daemon=True,
                                        name="guard-load")
        self._started = False
        if eager:
            self._start()

    def _start(self) -> None:
        if not self._started:
            with self._lock:
                if not self._started:
                    self._loader.start()
                    self._started = True

    def _load(self, load: Callable[[], GuardModel]) -> None:
        try:
            self._model = load()
        except Exception as exc:  # one log line; the cheap tiers carry on
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("injection guard tier off: %s", self.error)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the model to load (starting it if not started); True when ready."""
        self._start()
        self._loader.join(timeout)
        return self._model is not None

    def judge(self, text: str, word_score: float) -> float | None:
        """The encoder's probability for ``text``, or None if gated out or skipped."""
        if word_score < self.config.gate:
            return None
        return self._run(text, budget=True)

    def read(self, text: str) -> float | None:
        """The encoder's probability for ``text`` without gate or rate/busy budget: for
        callers that asked for a verdict and wait for it (the scan API, the library).
        Still bounded (first ``max_windows`` windows, one run at a time); None when the
        model is not ready or the text is blank. Its model time is charged to the busy
        bucket: with ``guard.spans`` on, the span path's share of the wall clock
        includes the scan requests' (a request is never skipped; spans are)."""
        return self._run(text, budget=False)

    def _run(self, text: str, budget: bool) -> float | None:
        if not text or text.isspace():
            return None
        model = self._model
        if model is None:
            self._start()
            self._skip("not_ready")
            return None
        # A window is 126 tokens, rarely over ~16 characters each: past that many
        # characters the rest of a text could not be read anyway; do not tokenize it.
        limit = self.config.max_windows * WINDOW * 16
        key = text_key(text[:limit])
        with self._lock:
            cached = self._verdicts.get(key)
            if cached is not None:
                self.stats.cached += 1
                return cached
        try:
            wins = model.windows(text[:limit])
        except Exception:  # the tokenizer refuses nothing we know of; never break the span
            log.debug("guard tokenizer failed", exc_info=True)
            return None
        partial = len(wins) > self.config.max_windows or len(text) > limit
        wins = wins[:self.config.max_windows]
        with self._lock:
            if budget and not self._admit(len(wins)):
                return None
            self._waiting += 1
            if partial:
                self.stats.skipped["windows"] += 1
        try:
            with self._model_lock:
                start = time.perf_counter()
                score = float(model.score_windows(wins).max())
                took = time.perf_counter() - start
        finally:
            with self._lock:
                self._waiting -= 1
        with self._lock:
            self._busy.spend(took)
            self.stats.judged += 1
            self.stats.windows += len(wins)
            self.stats.seconds += took
            self._verdicts.put(key, score)
        return score

    def _admit(self, windows: int) -> bool:
        """Queue, rate and busy bounds (lock held); a refusal is counted by reason."""
        if self._waiting >= self.config.queue_max:
            self._skip_locked("queue")
            return False
        if not self._rate.try_take(windows):
            self._skip_locked("rate")
            return False
        if self._busy.level <= 0:  # in debt: one run may overdraw, then none
            self._rate.put_back(windows)
            self._skip_locked("busy")
            return False
        return True

    def _skip(self, reason: str) -> None:
        with self._lock:
            self._skip_locked(reason)

    def _skip_locked(self, reason: str) -> None:
        self.stats.skipped[reason] += 1
