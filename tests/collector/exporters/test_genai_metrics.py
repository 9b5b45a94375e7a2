"""The OTel GenAI client histograms beside the spec's eight llm_* series."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from llm_observe.collector.exporters.genai import DURATION_BUCKETS_S, TOKEN_BUCKETS
from llm_observe.collector.exporters.prometheus import LabelLimits, LlmMetrics
from llm_observe.collector.settings import Settings
from llm_observe.span import LlmSpan

LABELS = {"gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model",
          "gen_ai_response_model"}


def span(model: str = "gpt-4o", provider: str = "openai", **kw: Any) -> LlmSpan:
    base: dict[str, Any] = {"service_name": "svc", "prompt_tokens": 10, "completion_tokens": 5,
                            "latency_ms_total": 1234, "latency_ms_ttft": 150}
    return LlmSpan(model=model, provider=provider, **{**base, **kw})


def families(m: LlmMetrics) -> dict[str, Any]:
    text = generate_latest(m.registry).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def total(fams: dict[str, Any], sample: str, **labels: str) -> float:
    return sum(s.value for f in fams.values() for s in f.samples if s.name == sample
               and all(s.labels.get(k) == v for k, v in labels.items()))


def test_names_labels_and_buckets() -> None:
    m = LlmMetrics(CollectorRegistry())
    m.record([span(actual_model="gpt-4o-2024-08-06")])
    f = families(m)
    tokens = f["gen_ai_client_token_usage"]
    duration = f["gen_ai_client_operation_duration_seconds"]
    ttft = f["gen_ai_client_operation_time_to_first_chunk_seconds"]
    assert {tokens.type, duration.type, ttft.type} == {"histogram"}
    assert set(tokens.samples[0].labels) - {"le"} == LABELS | {"gen_ai_token_type"}
    assert set(duration.samples[0].labels) - {"le"} == LABELS | {"error_type"}
    assert set(ttft.samples[0].labels) - {"le"} == LABELS
    s = tokens.samples[0].labels
    assert (s["gen_ai_operation_name"], s["gen_ai_provider_name"], s["gen_ai_request_model"],
            s["gen_ai_response_model"]) == ("chat", "openai", "gpt-4o", "gpt-4o-2024-08-06")

    def bounds(fam: Any, **labels: str) -> list[float]:
        return [float(s.labels["le"]) for s in fam.samples if s.name.endswith("_bucket")
                and all(s.labels[k] == v for k, v in labels.items())]
    inf = float("inf")
    assert bounds(tokens, gen_ai_token_type="input") == [*map(float, TOKEN_BUCKETS), inf]
    assert bounds(duration) == [*DURATION_BUCKETS_S, inf]
    assert bounds(ttft) == [*DURATION_BUCKETS_S, inf]
    assert total(f, "gen_ai_client_operation_duration_seconds_sum") == pytest.approx(1.234)
    assert total(f, "gen_ai_client_operation_time_to_first_chunk_seconds_sum") \
        == pytest.approx(0.15)
    le = {s.labels["le"]: s.value for s in duration.samples if s.name.endswith("_bucket")}
    assert le["0.64"] == 0 and le["1.28"] == 1


def test_provider_uses_the_semconv_name() -> None:
    from llm_observe.providers.registry import semconv_provider
    m = LlmMetrics(CollectorRegistry())
    m.record([span("gemini-1.5-pro", "google")])
    names = {s.labels["gen_ai_provider_name"]
             for s in families(m)["gen_ai_client_token_usage"].samples}
    assert names == {semconv_provider("google")}


def test_both_families_agree() -> None:
    m = LlmMetrics(CollectorRegistry())
    batch = [span(model, prov, service_name=f"s{i % 3}", prompt_tokens=i, completion_tokens=2 * i,
                  latency_ms_total=100 + 37 * i, latency_ms_ttft=10 + i,
                  status="error" if i % 5 == 0 else "success")
             for i in range(200) for model, prov in (("gpt-4o", "openai"),
                                                      ("claude-3-5-sonnet", "anthropic"))]
    for i in range(0, len(batch), 64):
        m.record(batch[i:i + 64])
    f = families(m)
    for model in ("gpt-4o", "claude-3-5-sonnet"):
        for ours, theirs in (("input", "prompt"), ("output", "completion")):
            assert total(f, "gen_ai_client_token_usage_sum", gen_ai_request_model=model,
                         gen_ai_token_type=ours) \
                == total(f, "llm_tokens_total", model=model, token_type=theirs)
        assert total(f, "gen_ai_client_operation_duration_seconds_count",
                     gen_ai_request_model=model) == total(f, "llm_spans_total", model=model)
        assert total(f, "gen_ai_client_operation_duration_seconds_sum",
                     gen_ai_request_model=model) == pytest.approx(
            total(f, "llm_latency_ms_total_sum", model=model) / 1000)
        assert total(f, "gen_ai_client_operation_time_to_first_chunk_seconds_count",
                     gen_ai_request_model=model) == total(f, "llm_latency_ms_ttft_count",
                                                          model=model)


def test_error_spans_carry_error_type() -> None:
    m = LlmMetrics(CollectorRegistry())
    m.record([span(status="error", error_type="RateLimitError"), span(status="error"),
              span()])
    f = families(m)
    counts = {s.labels["error_type"]: s.value for s in
              f["gen_ai_client_operation_duration_seconds"].samples
              if s.name.endswith("_count")}
    assert counts == {"RateLimitError": 1, "_OTHER": 1, "": 1}


def test_off_when_disabled() -> None:
    assert Settings().genai_metrics is True
    m = LlmMetrics(CollectorRegistry(), genai=False)
    m.record([span()])
    assert not any(name.startswith("gen_ai") for name in families(m))
    from llm_observe.collector.assembly import build_collector
    c = build_collector(Settings(genai_metrics=False, embedding_enabled=False))
    assert c.metrics.genai is None
    assert build_collector(Settings(embedding_enabled=False)).metrics.genai is not None


def test_the_budget_bounds_them() -> None:
    budget = 40
    m = LlmMetrics(CollectorRegistry(), LabelLimits(label_sets=budget))
    m.record([span(f"model-{i}", actual_model=f"resp-{i}", service_name=f"s{i}",
                   status=("success", "error")[i % 2], error_type=f"E{i}") for i in range(300)])
    f = families(m)
    for name in ("gen_ai_client_token_usage", "gen_ai_client_operation_duration_seconds",
                 "gen_ai_client_operation_time_to_first_chunk_seconds"):
        sets = {tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                for s in f[name].samples if s.name.endswith("_count")}
        assert len(sets) <= budget + 2, name  # + the overflow sets
    # nothing lost: every span is counted, folded ones under __overflow__
    assert total(f, "gen_ai_client_operation_duration_seconds_count") == 300
    assert total(f, "gen_ai_client_token_usage_sum", gen_ai_token_type="input") == 3000
    assert total(f, "gen_ai_client_operation_duration_seconds_count",
                 gen_ai_request_model="__overflow__") > 0
    assert total(f, "llm_observe_label_overflow_total", label="genai_label_set") > 0
