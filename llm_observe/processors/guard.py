"""GuardProcessor: the encoder tier's verdict on untrusted text the cheap tiers let pass.

Runs right after ScanProcessor, before sampling, embeddings and every exporter, so its
verdict is in before the span's metrics are recorded (``llm_injection_attempts_total``
counts it). For each span not already flagged, each untrusted part of its prompt (a user
turn, a tool result or retrieved document, text of unknown role: scan/roles.py, the same
runs as the scan stage) whose word-model probability reaches the gate is read by the
encoder (llm_observe.guard.tier: rate, share of wall clock, queue bounds). At or above its
role's threshold the span gets an injection finding (``detector="encoder"``,
``name="injection_encoder"``, spanning that part, with the probability, role and message)
and ``injection_attempt``. A part the budget skips is counted in
``llm_observe_scan_skipped_total{reason}`` and keeps the cheap tiers' verdict: the span is
never held back waiting for the model. The completion is not judged (the model's text is
not an attempt by the caller).

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
from llm_observe.scan.findings import INJECTION, Finding
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
                 registry: CollectorRegistry | None = None) -> None:
        self.tier = tier
        self.word = word
        self.rule = rule
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
            score = self.tier.judge(part, self.word.probability(fold(part).text))
            if score is not None and score >= self.rule.threshold(role):
                self.tier.stats.flagged += 1
                return Finding(INJECTION, "injection_encoder", start, end, "high", location,
                               "encoder", round(score, 4), role, index)
        return None


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
