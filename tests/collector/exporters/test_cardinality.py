"""No label value can break the exposition, and no client can grow it without bound.

Label values are cleaned where they first appear (a lone surrogate made every scrape
fail), and every family's label sets are capped by ``LabelLimits.label_sets`` (B): past
it, new groups and children are counted under the overflow group, totals intact. The
stated bound, whatever the label values: at most 32·B lines and 8 KiB·B bytes of
exposition from the LLM families (see ``label_sets.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from llm_observe.collector.exporters.labels import OVERFLOW, clean_label, label_units
from llm_observe.collector.exporters.prometheus import LabelLimits, LlmMetrics
from llm_observe.span import LlmSpan

OVERFLOW_SET = {"model": OVERFLOW, "provider": OVERFLOW, "service_name": OVERFLOW}
FAMILIES = ("llm_tokens", "llm_cost_usd_micro", "llm_latency_ms_total", "llm_latency_ms_ttft",
            "llm_pii_detected", "llm_injection_attempts", "llm_finish_reason", "llm_spans",
            "llm_observe_unpriced_spans")
# the overflow group's own sets: 2 token types, 3 statuses x 2, 50 reasons + overflow
OVERFLOW_SETS_MAX = 51


def span(model: str = "gpt-4o", provider: str = "openai", service: str = "chat",
         **kw: object) -> LlmSpan:
    base: dict[str, object] = {"model": model, "provider": provider, "service_name": service,
                               "prompt_tokens": 10, "completion_tokens": 5,
                               "latency_ms_total": 800, "latency_ms_ttft": 100,
                               "finish_reason": "stop", "cost_usd_micro": 7}
    base.update(kw)
    return LlmSpan(**base)  # type: ignore[arg-type]


def label_sets(families: Iterable[Metric]) -> dict[str, tuple[int, int]]:
    """Per LLM family: (label sets outside the overflow group, label sets inside it)."""
    sets: dict[str, set[tuple[tuple[str, str], ...]]] = defaultdict(set)
    for family in families:
        if family.name in FAMILIES:
            for s in family.samples:
                sets[family.name].add(tuple(sorted((k, v) for k, v in s.labels.items()
                                                   if k != "le")))
    out = {}
    for name, found in sets.items():
        spilled = sum(1 for labels in found
                      if all(v == OVERFLOW for k, v in labels if k in OVERFLOW_SET))
        out[name] = (len(found) - spilled, spilled)
    return out


def totals(families: Iterable[Metric]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for family in families:
        for s in family.samples:
            out[s.name] += s.value
    return out


def value(families: Iterable[Metric], name: str, **labels: str) -> float | None:
    for family in families:
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


def overflowed(registry: CollectorRegistry, label: str) -> float:
    return value(registry.collect(), "llm_observe_label_overflow_total", label=label) or 0.0


@pytest.mark.parametrize(("raw", "clean"), [
    ("gpt-4o", "gpt-4o"),
    ("m\ud800", "m\ufffd"),  # lone high surrogate
    ("\udfffx\udc80", "\ufffdx\ufffd"),  # lone low surrogates (a surrogate escape too)
    ("a\x00b\x1f\x7f\x85\x9f", "a\ufffdb\ufffd\ufffd\ufffd\ufffd"),  # C0, DEL, C1
    ("tab\there\nnl", "tab\ufffdhere\ufffdnl"),
    ("模型 🙂 café\u00a0x\u200d", "模型 🙂 café\u00a0x\u200d"),  # valid text is kept as is
])
def test_clean_label_replaces_only_what_cannot_render(raw: str, clean: str) -> None:
    assert clean_label(raw) == clean
    clean.encode("utf-8")


def test_a_lone_surrogate_in_any_label_still_renders() -> None:
    m = LlmMetrics(CollectorRegistry())
    m.record([span(model="m\ud800", provider="p\udfff", service="s\x00",
                   finish_reason="stop\ud800")])
    text = generate_latest(m.registry).decode("utf-8")  # raised UnicodeEncodeError before
    spans = [s for f in text_string_to_metric_families(text) for s in f.samples
             if s.name == "llm_spans_total"]
    assert [(s.labels["model"], s.labels["provider"], s.labels["service_name"], s.value)
            for s in spans] == [("m\ufffd", "p\ufffd", "s\ufffd", 1.0)]
    assert 'finish_reason="stop\ufffd"' in text


def test_500_models_x_40_services_stay_within_the_budget() -> None:
    budget = LabelLimits().label_sets
    assert budget == 10_000
    m = LlmMetrics(CollectorRegistry())
    sent = [span(model=f"model-{i:03d}", service=f"service-{j:02d}")
            for i in range(500) for j in range(40)]
    for k in range(0, len(sent), 1000):  # as record-batch sends them
        m.record(sent[k:k + 1000])
    body = generate_latest(m.registry)
    collected = list(m.registry.collect())  # one pass: collecting 270,000 samples takes time
    sets = label_sets(collected)
    for name in FAMILIES:
        inside, spilled = sets[name]
        assert inside <= budget, name
        assert 1 <= spilled <= OVERFLOW_SETS_MAX, name
    # every group is 2 units of the budget (two token types): 5,000 groups, 15,000 folded
    assert sets["llm_cost_usd_micro"] == (5_000, 1)
    assert sets["llm_tokens"] == (10_000, 2)
    assert value(collected, "llm_observe_label_overflow_total", label="label_set") == 15_000
    # nothing is lost: every span is counted, the folded ones under the overflow group
    t = totals(collected)
    assert t["llm_spans_total"] == 20_000
    assert t["llm_tokens_total"] == 20_000 * 15
    assert t["llm_cost_usd_micro_total"] == 20_000 * 7
    assert t["llm_latency_ms_total_count"] == 20_000
    assert t["llm_finish_reason_total"] == 20_000
    assert value(collected, "llm_spans_total", **OVERFLOW_SET, status="success",
                 has_retries="false") == 15_000
    # bounded in bytes: 29.1 MB measured (was 116 MB, 1.08 M lines, without the budget)
    assert len(body) < 32_000_000
    assert body.count(b"\n") < 300_000
    assert len(body) <= 8192 * budget


@pytest.mark.parametrize("name_chars", ["x", "🙂"])
def test_adversarial_labels_stay_within_the_line_and_byte_bound(name_chars: str) -> None:
    # labels as long as allowed (1 unit each when ASCII: the most bytes per unit), every
    # status/retry combination and 51 finish reasons per group: all three budgets full
    budget = 400  # the eight families' bound (the GenAI ones: test_genai_metrics.py)
    m = LlmMetrics(CollectorRegistry(), LabelLimits(label_sets=budget), genai=False)
    batch = []
    for g in range(300):
        model = f"{g:05d}" + name_chars * 89  # ASCII: 128 bytes with the two below
        provider, service = f"{g:05d}" + "p" * 9, f"{g:05d}" + 's"\\' * 3
        for r in range(51):
            batch.append(span(model, provider, service, finish_reason=f"r{r:02d}" + "f" * 90,
                              status=("success", "error")[r % 2], retry_count=r // 2 % 2))
    m.record(batch)
    body = generate_latest(m.registry)
    sets = label_sets(m.registry.collect())
    for name in FAMILIES:
        assert sets[name][0] <= budget, name
    lines = body.count(b"\n")
    assert lines <= 32 * budget + 400  # + the overflow group, HELP and TYPE
    assert len(body) <= 8192 * budget + 64_000  # + the overflow group's 51 reasons
    print(f"{len(body)} bytes, {lines} lines for a budget of {budget}")
    assert t_spans(m) == len(batch)


def t_spans(m: LlmMetrics) -> float:
    return totals(m.registry.collect())["llm_spans_total"]


def test_spans_past_the_budget_count_under_the_overflow_group() -> None:
    m = LlmMetrics(CollectorRegistry(), LabelLimits(label_sets=6))  # 3 groups of 1 unit
    m.record([span(service=f"svc-{i}") for i in range(5)])
    m.record([span(service="svc-4"), span(service="svc-0")])  # cached: not counted again
    assert overflowed(m.registry, "label_set") == 2
    get = m.registry.get_sample_value
    assert get("llm_tokens_total", {**OVERFLOW_SET, "token_type": "prompt"}) == 30
    assert get("llm_tokens_total", {"model": "gpt-4o", "provider": "openai",
                                    "service_name": "svc-0", "token_type": "prompt"}) == 20
    assert get("llm_observe_unpriced_spans_total", {"model": OVERFLOW,
                                                    "provider": OVERFLOW}) == 0
    assert get("llm_pii_detected_total", {"service_name": OVERFLOW}) == 0
    assert t_spans(m) == 7


def test_finish_reasons_and_statuses_have_their_own_budget() -> None:
    m = LlmMetrics(CollectorRegistry(), LabelLimits(label_sets=4))  # 2 groups
    m.record([span(service=s, finish_reason=r) for s in ("a", "b") for r in ("stop", "length",
                                                                            "tool_calls")])
    m.record([span(service="a", status="error", retry_count=r) for r in (0, 1, 2)])
    get = m.registry.get_sample_value
    # 6 (group, reason) sets for a budget of 4: the last two fold, their reason kept
    assert get("llm_finish_reason_total", {**OVERFLOW_SET, "finish_reason": "tool_calls"}) == 1
    assert get("llm_finish_reason_total", {**OVERFLOW_SET, "finish_reason": "length"}) == 1
    assert sum(get("llm_finish_reason_total", {"model": "gpt-4o", "provider": "openai",
                                               "service_name": "a", "finish_reason": r}) or 0
               for r in ("stop", "length", "tool_calls")) == 3 + 3  # the error spans: "stop"
    # spans: a/success, b/success, a/error/false, a/error/true = 4: the budget, no more
    assert sum(label_sets(m.registry.collect())["llm_spans"]) == 4
    assert overflowed(m.registry, "label_set") == 2
    assert t_spans(m) == 9


def test_long_label_values_cost_more_of_the_budget() -> None:
    assert label_units("gpt-4o", "openai", "chat") == 1
    assert label_units("m" * 128, "openai", "chat") == 2
    assert label_units('"' * 64) == 1 and label_units('"' * 65) == 2  # escaped: 2 bytes each
    assert label_units("🙂" * 128) == 4
    m = LlmMetrics(CollectorRegistry(), LabelLimits(label_sets=8))
    m.record([span(model="a" * 300, service="long-1")])  # cut to 128 chars: 2 units x 2
    m.record([span(model="b" * 300, service="long-2")])  # 4 of 4 left
    m.record([span(model="c" * 300, service="long-3")])  # refused
    m.record([span(model="short")])  # refused too: nothing left
    models = {s.labels["model"] for f in m.registry.collect() if f.name == "llm_cost_usd_micro"
              for s in f.samples}
    assert models == {"a" * 128, "b" * 128, OVERFLOW}
    assert overflowed(m.registry, "label_set") == 2


def test_a_status_the_doors_would_refuse_is_folded_not_exposed() -> None:
    m = LlmMetrics(CollectorRegistry())
    m.record([span(status="weird\ud800"), span(status="error")])
    statuses = {s.labels["status"] for f in m.registry.collect() if f.name == "llm_spans"
                for s in f.samples}
    assert statuses == {OVERFLOW, "error"}
    assert overflowed(m.registry, "status") == 1
    generate_latest(m.registry)


def test_finish_reasons_past_their_cap_are_counted() -> None:
    m = LlmMetrics(CollectorRegistry(), LabelLimits(finish_reasons=2))
    m.record([span(finish_reason=r) for r in ("stop", "length", "x", "y")])
    assert overflowed(m.registry, "finish_reason") == 2
