"""The label sets of :class:`LlmMetrics`' families: created once, guarded, budgeted, cached.

A *group* is one (model, provider, service_name) with its cached children. Every
family's label sets are bounded by ``LabelLimits.label_sets`` (B), counted in units
(:func:`label_units`: 1 per started 128 bytes of caller-given label values):

- a new group takes ``2 * units`` from the group budget: ``llm_tokens_total`` has two
  sets per group, so at most B/2 groups, and at most B/2 sets in ``llm_cost_usd_micro``,
  both histograms, ``llm_observe_unpriced_spans``, ``llm_pii_detected``,
  ``llm_injection_attempts``;
- a new ``llm_spans_total`` or ``llm_finish_reason_total`` child takes its units from
  that family's own budget of B.

Past a budget the new group, or the new child, is counted under the *overflow group*
(every label ``__overflow__``, exempt from the budget: at most 2 token, 6 span and 51
finish-reason sets of its own): totals are kept, only the labels are lost, and each
refusal counts in ``llm_observe_label_overflow_total{label="label_set"}`` (once per raw
name triple while the raw-name cache has room). All of this runs only where a group or
child is created, never on the per-span cached path. Event-loop thread only.

The bound this gives the eight families, whatever the label values: at most 32·B lines
(B/2 groups x 56 lines: histogram buckets, sums, counts and ``_created`` lines included;
plus 2 lines per spans or finish-reason set) and 8 KiB·B bytes (128 bytes of fixed text
per line plus at most 128 bytes of label values per unit). At the default B = 10,000:
320,000 lines, 82 MB at worst; 270,000 lines and 29 MB for short names (measured).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from llm_observe.collector.exporters.genai import OPERATION, OTHER_ERROR, GenAiSet
from llm_observe.collector.exporters.labels import OVERFLOW, LabelBudget, LabelGuard, label_units
from llm_observe.collector.longlived import long_lived
from llm_observe.providers.registry import semconv_provider
from llm_observe.span import STATUSES, LlmSpan

if TYPE_CHECKING:
    from llm_observe.collector.exporters.prometheus import LlmMetrics

BASE_LABELS = ("model", "provider", "service_name")
OVERFLOW_KEY = (OVERFLOW, OVERFLOW, OVERFLOW)
RAW_CACHE_MAX = 100_000  # raw (model, provider, service) names remembered: bounded too


@dataclass(frozen=True, slots=True)
class LabelLimits:
    """Distinct values per label before they fold into ``__overflow__``; label sets per family."""

    models: int = 500
    providers: int = 100
    services: int = 500
    finish_reasons: int = 50
    error_types: int = 50
    label_sets: int = 10_000  # Settings.max_label_sets

    def validate(self) -> None:
        for name in ("models", "providers", "services", "finish_reasons", "error_types",
                     "label_sets"):
            if getattr(self, name) < 1:
                raise ValueError(f"label limit {name} must be >= 1")


class Group:
    """Cached label children for one (model, provider, service_name)."""

    __slots__ = ("completion", "cost", "exemplars_until", "finish", "finish_sets", "genai",
                 "injection", "key", "latency", "pii", "prompt", "slowest", "spans",
                 "spans_sets", "ttft", "unpriced")

    def __init__(self, m: LlmMetrics, key: tuple[str, str, str]) -> None:
        self.key = key
        self.prompt = m.tokens.labels(*key, "prompt")
        self.completion = m.tokens.labels(*key, "completion")
        self.cost = m.cost.labels(*key)
        self.latency = m.latency.labels(*key)
        self.ttft = m.ttft.labels(*key)
        self.pii = m.pii.labels(key[2])
        self.injection = m.injection.labels(key[2])
        self.unpriced = m.unpriced.labels(key[0], key[1])
        # children by raw value (the cached path), and by exposed label values: the sets
        # this group owns (two raw values may share one set, which is charged once)
        self.finish: dict[str, Any] = {}
        self.finish_sets: dict[str, Any] = {}
        self.spans: dict[tuple[str, bool], Any] = {}
        self.spans_sets: dict[tuple[str, str], Any] = {}
        self.genai: dict[Any, GenAiSet] = {}  # by GenAI tally key (see LlmMetrics.record)
        # exemplars.py: when all exemplars are picked again; the slowest call since then
        self.exemplars_until = 0.0
        self.slowest: float = 0


class LabelSets:
    """Finds or creates the group of a span and the children of a group, within the limits."""

    def __init__(self, metrics: LlmMetrics, limits: LabelLimits) -> None:
        self._m = metrics
        self._overflow_counters: dict[str, Any] = {}
        self._model = LabelGuard(limits.models, partial(self._overflowed, "model"))
        self._provider = LabelGuard(limits.providers, partial(self._overflowed, "provider"))
        self._service = LabelGuard(limits.services, partial(self._overflowed, "service_name"))
        self._finish = LabelGuard(limits.finish_reasons,
                                  partial(self._overflowed, "finish_reason"))
        self._group_budget = LabelBudget(limits.label_sets)
        self._spans_budget = LabelBudget(limits.label_sets)
        self._finish_budget = LabelBudget(limits.label_sets)
        self._error = LabelGuard(limits.error_types, partial(self._overflowed, "error_type"))
        self._genai_budget = LabelBudget(limits.label_sets)
        self._genai_sets: dict[tuple[str, str, str, str, str], GenAiSet] = {}
        self._groups: dict[tuple[str, str, str], Group] = {}
        self._by_raw: dict[tuple[str, str, str], Group] = {}

    def group(self, span: LlmSpan) -> Group:
        """The span's group: cached by raw names; a new one is guarded and budgeted."""
        raw = (span.model, span.provider, span.service_name)
        group = self._by_raw.get(raw)
        if group is not None:
            return group
        key = (self._model(span.model), self._provider(span.provider),
               self._service(span.service_name))
        group = self._groups.get(key)
        if group is None:
            if key != OVERFLOW_KEY and self._group_budget.take(2 * label_units(*key)):
                group = self._groups[key] = Group(self._m, key)
                long_lived.made(8)  # children that live until exit
            else:
                group = self._overflow_group()
                if key != OVERFLOW_KEY:
                    self._overflowed("label_set")
        if len(self._by_raw) < RAW_CACHE_MAX:
            self._by_raw[raw] = group
        return group

    def finish_child(self, g: Group, reason: str) -> Any:
        """The ``llm_finish_reason_total`` child of ``g`` for ``reason``, cached on ``g``."""
        label = self._finish(reason)
        child = g.finish_sets.get(label)
        if child is None:
            if g.key == OVERFLOW_KEY or self._finish_budget.take(label_units(*g.key, label)):
                child = g.finish_sets[label] = self._m.finish_reason.labels(*g.key, label)
                long_lived.made(1)
            else:
                self._overflowed("label_set")
                child = self.finish_child(self._overflow_group(), reason)
        g.finish[reason] = child
        return child

    def spans_child(self, g: Group, skey: tuple[str, bool]) -> Any:
        """The ``llm_spans_total`` child of ``g`` for (status, has retries), cached on ``g``."""
        status = skey[0]
        if status not in STATUSES:  # both doors allow only these; a library caller may not
            status = OVERFLOW
            self._overflowed("status")
        labels = (status, "true" if skey[1] else "false")
        child = g.spans_sets.get(labels)
        if child is None:
            if g.key == OVERFLOW_KEY or self._spans_budget.take(label_units(*g.key)):
                child = g.spans_sets[labels] = self._m.spans.labels(*g.key, *labels)
                long_lived.made(1)
            else:
                self._overflowed("label_set")
                child = self.spans_child(self._overflow_group(), skey)
        g.spans[skey] = child
        return child

    def genai_set(self, g: Group, k: Any) -> GenAiSet:
        """The GenAI children of ``g`` for tally key ``k``, cached on ``g``.

        ``k`` is the span's ``actual_model`` (success) or (``actual_model``, ``error_type``)
        (error). A new exposed label set takes ``2 * units`` from the GenAI budget of B (the
        token histogram has two sets per label set), like a group; past it the set folds
        into the all-``__overflow__`` one (two at most: with and without an error type),
        counted in ``llm_observe_label_overflow_total{label="genai_label_set"}``.
        """
        actual, err = (k[0], self._error(k[1] or OTHER_ERROR)) \
            if isinstance(k, tuple) else (k, "")
        response = self._model(actual) if actual else g.key[0]
        labels = (OPERATION, semconv_provider(g.key[1]), g.key[0], response)
        key = (*labels, err)
        s = self._genai_sets.get(key)
        if s is None:
            exempt = labels[1:] == (OVERFLOW, OVERFLOW, OVERFLOW) and err in ("", OVERFLOW)
            if exempt or self._genai_budget.take(2 * label_units(*labels[1:], err)):
                s = self._genai_sets[key] = GenAiSet(self._genai(), labels, err)
                long_lived.made(4)
            else:
                self._overflowed("genai_label_set")
                over = (OPERATION, OVERFLOW, OVERFLOW, OVERFLOW, OVERFLOW if err else "")
                s = self._genai_sets.get(over)
                if s is None:
                    s = self._genai_sets[over] = GenAiSet(self._genai(), over[:4], over[4])
        g.genai[k] = s
        return s

    def _genai(self) -> Any:
        genai = self._m.genai
        if genai is None:
            raise RuntimeError("GenAI metrics are off")
        return genai

    def _overflow_group(self) -> Group:
        group = self._groups.get(OVERFLOW_KEY)
        if group is None:  # exempt from the budget: it is where the refusals go
            group = self._groups[OVERFLOW_KEY] = Group(self._m, OVERFLOW_KEY)
        return group

    def _overflowed(self, label: str) -> None:
        counter = self._overflow_counters.get(label)
        if counter is None:
            counter = self._overflow_counters[label] = self._m.label_overflow.labels(label)
        counter.inc()
