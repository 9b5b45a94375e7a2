from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from llm_observe.collector.exporters.labels import OVERFLOW
from llm_observe.collector.exporters.prometheus import LabelLimits, LlmMetrics
from llm_observe.span import LlmSpan


def scrape(registry: CollectorRegistry) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Parse the text exposition exactly as Prometheus would receive it."""
    text = generate_latest(registry).decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def value(samples: dict[str, list[tuple[dict[str, str], float]]], name: str,
          **labels: str) -> float:
    return sum(v for lab, v in samples.get(name, []) if labels.items() <= lab.items())


def make(**kw: object) -> LlmSpan:
    base: dict[str, object] = {"model": "gpt-4o", "provider": "openai", "service_name": "chat",
                               "prompt_tokens": 100, "completion_tokens": 20,
                               "latency_ms_total": 800, "latency_ms_ttft": 120,
                               "finish_reason": "stop", "cost_usd_micro": 450}
    base.update(kw)
    return LlmSpan(**base)  # type: ignore[arg-type]


def test_the_eight_series_with_their_spec_labels() -> None:
    m = LlmMetrics(CollectorRegistry())
    m.record([
        make(),
        make(status="error", retry_count=2, finish_reason="length", pii_detected=True),
        make(model="claude-3-5-sonnet", provider="anthropic", service_name="search",
             injection_attempt=True, finish_reason="tool_calls", latency_ms_ttft=None,
             cost_usd_micro=None),
    ])
    s = scrape(m.registry)
    base = {"model": "gpt-4o", "provider": "openai", "service_name": "chat"}
    assert value(s, "llm_tokens_total", **base, token_type="prompt") == 200
    assert value(s, "llm_tokens_total", **base, token_type="completion") == 40
    assert value(s, "llm_cost_usd_micro_total", **base) == 900
    assert value(s, "llm_latency_ms_total_count", **base) == 2
    assert value(s, "llm_latency_ms_total_sum", **base) == 1600
    assert value(s, "llm_latency_ms_total_bucket", **base, le="1000.0") == 2
    assert value(s, "llm_latency_ms_total_bucket", **base, le="500.0") == 0
    assert value(s, "llm_latency_ms_ttft_count", **base) == 2
    # the anthropic span had no TTFT (not streamed): no observation
    assert value(s, "llm_latency_ms_ttft_count", model="claude-3-5-sonnet") == 0
    assert value(s, "llm_pii_detected_total", service_name="chat") == 1
    assert value(s, "llm_injection_attempts_total", service_name="search") == 1
    assert value(s, "llm_finish_reason_total", **base, finish_reason="length") == 1
    assert value(s, "llm_finish_reason_total", finish_reason="tool_calls",
                 provider="anthropic") == 1
    assert value(s, "llm_spans_total", **base, status="error", has_retries="true") == 1
    assert value(s, "llm_spans_total", **base, status="success", has_retries="false") == 1
    # unpriced: no cost series increment, and the self-metric counts it
    assert value(s, "llm_cost_usd_micro_total", model="claude-3-5-sonnet") == 0
    assert value(s, "llm_observe_unpriced_spans_total", model="claude-3-5-sonnet",
                 provider="anthropic") == 1
    label_sets = {
        "llm_tokens_total": {"model", "provider", "service_name", "token_type"},
        "llm_cost_usd_micro_total": {"model", "provider", "service_name"},
        "llm_latency_ms_total_bucket": {"model", "provider", "service_name", "le"},
        "llm_latency_ms_ttft_bucket": {"model", "provider", "service_name", "le"},
        "llm_pii_detected_total": {"service_name"},
        "llm_injection_attempts_total": {"service_name"},
        "llm_finish_reason_total": {"model", "provider", "service_name", "finish_reason"},
        "llm_spans_total": {"model", "provider", "service_name", "status", "has_retries"},
    }
    for name, labels in label_sets.items():
        assert s[name], name
        assert all(set(lab) == labels for lab, _ in s[name]), name


def test_types_are_counter_and_histogram() -> None:
    m = LlmMetrics(CollectorRegistry())
    m.record([make()])
    types = {f.name: f.type for f in text_string_to_metric_families(
        generate_latest(m.registry).decode())}
    assert types["llm_latency_ms_total"] == "histogram"
    assert types["llm_latency_ms_ttft"] == "histogram"
    for name in ("llm_tokens", "llm_cost_usd_micro", "llm_pii_detected",
                 "llm_injection_attempts", "llm_finish_reason", "llm_spans"):
        assert types[name] == "counter", name


def test_cardinality_is_capped_with_an_overflow_value() -> None:
    m = LlmMetrics(CollectorRegistry(), LabelLimits(models=3, services=2))
    m.record([make(model=f"model-{i}", service_name=f"svc-{i}") for i in range(10)])
    s = scrape(m.registry)
    models = {lab["model"] for lab, _ in s["llm_spans_total"]}
    services = {lab["service_name"] for lab, _ in s["llm_spans_total"]}
    assert models == {"model-0", "model-1", "model-2", OVERFLOW}
    assert services == {"svc-0", "svc-1", OVERFLOW}
    assert value(s, "llm_spans_total") == 10  # nothing lost, only folded
    assert value(s, "llm_observe_label_overflow_total", label="model") == 7


def test_long_label_values_are_truncated() -> None:
    m = LlmMetrics(CollectorRegistry())
    m.record([make(model="m" * 200)])
    s = scrape(m.registry)
    assert {len(lab["model"]) for lab, _ in s["llm_spans_total"]} == {128}


def test_a_batch_exposes_exactly_what_span_by_span_updates_do() -> None:
    # record() sums a batch per label group and touches each bucket once; the scrape
    # must equal one span per call, including values that sit exactly on a bucket bound.
    spans = [make(latency_ms_total=v, latency_ms_ttft=t, finish_reason=f, status=st,
                  retry_count=r, pii_detected=p, cost_usd_micro=c, service_name=svc)
             for v, t, f, st, r, p, c, svc in [
                 (25, 10, "stop", "success", 0, False, 450, "chat"),
                 (26, 11, "length", "error", 1, True, None, "chat"),
                 (1_000, 1_000, "stop", "success", 0, False, 0, "search"),
                 (600_000, 60_000, "tool_calls", "success", 3, False, 7, "chat"),
                 (700_000, 90_000, "stop", "success", 0, True, 12, "search"),
                 (0, 0, "stop", "success", 0, False, 1, "chat")]]
    batched, one_by_one = LlmMetrics(CollectorRegistry()), LlmMetrics(CollectorRegistry())
    batched.record(spans)
    for span in spans:
        one_by_one.record([span])
    got, want = scrape(batched.registry), scrape(one_by_one.registry)
    drop = ("_created",)
    assert {k: sorted(map(str, v)) for k, v in got.items() if not k.endswith(drop)} == \
        {k: sorted(map(str, v)) for k, v in want.items() if not k.endswith(drop)}
    assert value(got, "llm_latency_ms_total_bucket", le="25.0") == 2  # 0 and 25 (cumulative)
    assert value(got, "llm_latency_ms_total_bucket", le="+Inf") == 6
    assert value(got, "llm_latency_ms_total_sum") == 25 + 26 + 1_000 + 600_000 + 700_000


def test_recording_gives_the_loop_back_after_each_new_label_set() -> None:
    """A batch of new label sets (a hostile client's) is recorded in steps that make at most
    one group each: 32 at a time held the event loop 5-30 ms and the health probe waited."""
    m = LlmMetrics(CollectorRegistry())
    batch = [make(model=f"m{i}", service_name=f"s{i}") for i in range(64)]
    groups: list[int] = []
    for _ in m.steps(batch):
        groups.append(len(m.sets._groups))
    assert groups[-1] == 64
    assert max(b - a for a, b in zip([0, *groups], groups, strict=False)) <= 1
    s = scrape(m.registry)
    assert value(s, "llm_tokens_total", model="m63", token_type="prompt") == 100
