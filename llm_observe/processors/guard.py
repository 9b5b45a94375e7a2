"""GuardProcessor: the encoder tier's verdict on untrusted text.

Two uses. :meth:`GuardProcessor.verdict` answers scan requests (the API, the library:
scan/requests.py) synchronously, by the combined verdict (guard/stack.py) on every
untrusted part. As a pipeline stage (only with ``guard.spans``, see
collector/assembly.py) it runs right after ScanProcessor, before sampling, embeddings
and every exporter, so its verdict is in before the span's metrics are recorded
(``llm_injection_attempts_total`` counts it). For each span not already flagged, each
untrusted part of its prompt (a user turn, a tool result or retrieved document, text of
unknown role: scan/roles.py, the same runs as the scan stage) whose word-model
probability reaches the gate is read by the encoder (llm_observe.guard.tier: rate, share
of wall clock, queue bounds). At or above its role's threshold (on the combined value
when the model has a stack; the cheap tiers passed the part, so no phrase hit counts)
the span gets an injection finding (``detector="encoder"``, ``name="injection_encoder"``,
spanning that part, with the score, role and message) and ``injection_attempt``. A part
the budget skips is counted in ``llm_observe_scan_skipped_total{reason}`` and keeps the
cheap tiers' verdict: the span is never held back waiting for the model. The completion
is not judged (the model's text is not an attempt by the caller).

``blocking`` is True: the pipeline runs it in an executor thread. It never raises for
a span's content.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from llm_observe.scan.classifier import InjectionModel
from llm_observe.scan.findings import INJECTION, Finding, ScanResult
from llm_observe.scan.messages import runs
from llm_observe.scan.normalize import fold
from llm_observe.scan.roles import TOOL, UNKNOWN, Segment, untrusted
from llm_observe.span import LlmSpan

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger(__name__)


class TierStats(Protocol):
    judged: int
    flagged: int
    seconds: float
    cached: int
    skipped: dict[str, int]


class Tier(Protocol):
    """llm_observe.guard.tier.GuardTier as this stage uses it (thread-safe, never raises)."""

    @property
    def stats(self) -> TierStats: ...

    def judge(self, text: str, word_score: float) -> float | None: ...

    def read(self, text: str) -> float | None: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class Stack(Protocol):
    """llm_observe.guard.stack.Stack as this stage uses it (pure arithmetic)."""

    def value(self, role: str, word: float, encoder: float, hit: bool) -> float: ...


@dataclass(frozen=True, slots=True)
class GuardRule:
    """Per untrusted role, the encoder probability at which a part is flagged."""

    user: float
    tool: float

    def threshold(self, role: str) -> float:
        return self.tool if role == TOOL else self.user


class GuardProcessor:
    """See the module docstring."""

    name = "guard"
    blocking = True

    def __init__(self, tier: Tier, word: InjectionModel, rule: GuardRule,
                 max_text_chars: int = 100_000,
                 registry: CollectorRegistry | None = None, stack: Stack | None = None,
                 ) -> None:
        self.tier = tier
        self.word = word
        self.rule = rule
        self.stack = stack
        self.max_text_chars = max_text_chars
        if registry is not None:
            registry.register(GuardMetrics(tier))

    def process(self, batch: list[LlmSpan]) -> None:
        for span in batch:
            if span.injection_attempt or not span.prompt_text:
                continue
            try:
                finding = self._judge(span)
            except Exception:  # a model fault must not drop the batch: cheap verdict stands
                log.warning("guard tier failed on a span", exc_info=True)
                continue
            if finding is not None:
                span.findings = [*span.findings, finding]
                span.injection_attempt = True

    def _judge(self, span: LlmSpan) -> Finding | None:
        segments = span.text_roles.get("prompt") if span.text_roles else None
        return self.judge_text(span.prompt_text or "", segments)

    def judge_text(self, text: str, segments: Sequence[Segment] | None = None,
                   location: str = "prompt") -> Finding | None:
        """The encoder's finding on the first untrusted part of ``text`` it flags, or None.

        ``segments`` are the parts' roles (scan/roles.py); without them the whole text is
        one part of unknown (untrusted) role. Also used by ``POST /v1/pii-injection/scan``
        and :class:`llm_observe.guard.GuardScanner` on texts the cheap tiers passed.
        Thread-safe (the tier locks); never raises for a text."""
        text = text[:self.max_text_chars]
        parts = runs(text, segments, UNKNOWN) if segments else [(0, len(text), UNKNOWN, -1, ())]
        for start, end, role, index, _ in parts:
            if not untrusted(role):
                continue
            part = text[start:end]
            word = self.word.probability(fold(part).text)
            score = self.tier.judge(part, word)
            if score is not None and self.stack is not None:  # no phrase/regex hit here
                score = self.stack.value(role, word, score, False)
            if score is not None and score >= self.rule.threshold(role):
                self.tier.stats.flagged += 1
                return Finding(INJECTION, "injection_encoder", start, end, "high", location,
                               "encoder", round(score, 4), role, index)
        return None

    def verdict(self, found: list[Finding], text: str, segments: Sequence[Segment] | None,
                location: str) -> list[Finding]:
        """The findings of a scan someone asked for and waits on (the scan API, the
        library: scan/requests.py), ``found`` being the cheap tiers'.

        With a stack (guard/stack.py), each untrusted part (the last
        :data:`MAX_READ_PARTS` of them) is read by the encoder with no gate and no rate
        budget, and the combined value of the tiers' readings decides the part's
        injection verdict: a part it clears loses the cheap tiers' injection findings, a
        part it flags keeps them or gains one ``injection_encoder`` finding (score: the
        combined value).
        Parts not read (past the cap; the model failed to load, or still loading after
        :data:`READY_WAIT` seconds) keep the cheap verdict. Without a stack: the union
        rule (a text the cheap tiers passed is read under gate and budget)."""
        if self.stack is None:
            if ScanResult(tuple(found)).injection_attempt:
                return found
            hit = self.judge_text(text, segments, location)
            return found if hit is None else sorted([*found, hit], key=lambda f: f.start)
        self.tier.wait(READY_WAIT)  # at start only: the graph builds once, then is cached
        text = text[:self.max_text_chars]
        parts = [p for p in (runs(text, segments, UNKNOWN) if segments
                             else [(0, len(text), UNKNOWN, -1, ())]) if untrusted(p[2])]
        if len(parts) > MAX_READ_PARTS:
            self.tier.stats.skipped["windows"] += 1
            parts = parts[-MAX_READ_PARTS:]
        drop: list[tuple[int, int]] = []
        added: list[Finding] = []
        for start, end, role, index, _ in parts:
            verdict = self._stacked(text[start:end], [
                f for f in found if f.type == INJECTION and start <= f.start < end], role)
            if verdict is None:
                continue
            flagged, value, cheap = verdict
            if not flagged:
                drop.append((start, end))
            elif not cheap:
                self.tier.stats.flagged += 1
                added.append(Finding(INJECTION, "injection_encoder", start, end, "high",
                                     location, "encoder", round(value, 6), role, index))
        kept = [f for f in found if f.type != INJECTION
                or not any(a <= f.start < b for a, b in drop)]
        return sorted([*kept, *added], key=lambda f: f.start) if added else kept

    def _stacked(self, part: str, cheap: list[Finding], role: str,
                 ) -> tuple[bool, float, bool] | None:
        """(flagged, combined value, cheap tiers flagged it), or None if not read."""
        assert self.stack is not None
        encoder = self.tier.read(part)
        if encoder is None:
            return None
        hit = any(f.detector != "classifier" for f in cheap)
        value = self.stack.value(role, self.word.probability(fold(part).text), encoder, hit)
        return value >= self.rule.threshold(role), value, bool(cheap)


MAX_READ_PARTS = 16  # untrusted parts read per scan request (<= 8 windows each)
READY_WAIT = 60.0  # seconds a scan request waits for the model to load (first start)


class GuardMetrics(Collector):
    """``llm_observe_scan_skipped_total{reason}`` and the encoder's own counters."""

    def __init__(self, tier: Tier) -> None:
        self.tier = tier

    def collect(self) -> Iterator[Metric]:
        stats = self.tier.stats
        skipped = CounterMetricFamily(
            "llm_observe_scan_skipped", "Untrusted texts the injection encoder tier did not "
            "read (or read in part: windows), by reason", labels=["reason"])
        for reason, n in stats.skipped.items():
            skipped.add_metric([reason], n)
        yield skipped
        yield _counter("llm_observe_scan_encoder_texts", "Texts the encoder tier read",
                       stats.judged)
        yield _counter("llm_observe_scan_encoder_flagged", "Texts the encoder tier flagged",
                       stats.flagged)
        yield _counter("llm_observe_scan_encoder_seconds", "Model time of the encoder tier",
                       stats.seconds)
        yield _counter("llm_observe_scan_encoder_cached", "Texts the encoder tier answered "
                       "from its verdict cache (read before: no model run)", stats.cached)

    def describe(self) -> Iterator[Metric]:
        return self.collect()


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc)
    family.add_metric([], value)
    return family


def thresholds_from(config: Mapping[str, float], shipped: Mapping[str, float]) -> GuardRule:
    """patterns.yaml's ``guard.thresholds`` over the model's own."""
    merged = {**shipped, **config}
    return GuardRule(user=float(merged["user"]), tool=float(merged["tool"]))
