"""Trace exemplars on the latency, TTFT, cost and token series (OpenMetrics scrapes only)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from llm_observe.collector.exporters.exposition import Exposition
from llm_observe.collector.exporters.prometheus import LlmMetrics
from llm_observe.collector.exporters.series_render import OPENMETRICS
from llm_observe.span import LlmSpan

T = ["a" * 32, "b" * 32, "c" * 32]


def _span(i: int, **kw: object) -> LlmSpan:
    base: dict[str, object] = {
        "model": "gpt-4o", "provider": "openai", "service_name": "svc", "prompt_tokens": 10,
        "completion_tokens": 5, "latency_ms_total": 300, "cost_usd_micro": 100,
        "trace_id": T[i], "span_id": f"{i + 1:016x}"}
    base.update(kw)
    return LlmSpan(**base)  # type: ignore[arg-type]


_EXPOSITIONS: dict[int, Exposition] = {}


def _exemplars(registry: CollectorRegistry) -> dict[tuple[str, str], tuple[str, float]]:
    """(sample name, le or token type) -> (trace id, exemplar value), from an OpenMetrics scrape."""
    expo = _EXPOSITIONS.get(id(registry))
    if expo is None or expo.registry is not registry:
        expo = _EXPOSITIONS[id(registry)] = Exposition(registry)
    text = expo.render(OPENMETRICS).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.exemplar is not None:
                key = s.labels.get("le") or s.labels.get("token_type") \
                    or s.labels.get("gen_ai_token_type", "")
                out[(s.name, key)] = (s.exemplar.labels["trace_id"], s.exemplar.value)
    return out


def test_the_slowest_and_the_priciest_call_of_a_batch_are_the_exemplars() -> None:
    r = CollectorRegistry()
    m = LlmMetrics(r)
    m.record([_span(0, latency_ms_total=400, cost_usd_micro=9000, prompt_tokens=900),
              _span(1, latency_ms_total=2600, latency_ms_ttft=700, cost_usd_micro=50),
              _span(2, latency_ms_total=90, latency_ms_ttft=1200, cost_usd_micro=None)])
    ex = _exemplars(r)
    assert ex[("llm_latency_ms_total_bucket", "3000.0")] == (T[1], 2600.0)
    assert ex[("gen_ai_client_operation_duration_seconds_bucket", "5.12")] == (T[1], 2.6)
    assert ex[("llm_latency_ms_ttft_bucket", "1500.0")] == (T[2], 1200.0)
    assert ex[("gen_ai_client_operation_time_to_first_chunk_seconds_bucket", "1.28")] == \
        (T[2], 1.2)
    assert ex[("llm_cost_usd_micro_total", "")] == (T[0], 9000.0)
    assert ex[("llm_tokens_total", "prompt")] == (T[0], 900.0)
    assert ex[("gen_ai_client_token_usage_bucket", "1024.0")] == (T[0], 900.0)
    # one exemplar per family and label set: no other bucket holds one
    assert sum(1 for name, _ in ex if name == "llm_latency_ms_total_bucket") == 1


def test_within_the_window_only_a_slower_call_replaces_the_latency_exemplar() -> None:
    r = CollectorRegistry()
    m = LlmMetrics(r)
    m.record([_span(0, latency_ms_total=1000)])
    m.record([_span(1, latency_ms_total=800, cost_usd_micro=7777)])  # faster: nothing changes
    ex = _exemplars(r)
    assert ex[("llm_latency_ms_total_bucket", "1000.0")] == (T[0], 1000.0)
    assert ("llm_latency_ms_total_bucket", "1000.0") in ex and len(
        [k for k in ex if k[0] == "llm_latency_ms_total_bucket"]) == 1
    assert ex[("llm_cost_usd_micro_total", "")] == (T[0], 100.0)  # picked once a window
    m.record([_span(2, latency_ms_total=50_000)])  # slower than the window so far
    assert _exemplars(r)[("llm_latency_ms_total_bucket", "60000.0")] == (T[2], 50_000.0)
    assert m.exemplars is not None
    m.exemplars.window_s = 0.0
    for g in m.sets._groups.values():
        g.exemplars_until = time.time() - 1  # the window is over: everything picked again
    m.record([_span(1, latency_ms_total=800, cost_usd_micro=7777)])
    assert _exemplars(r)[("llm_cost_usd_micro_total", "")] == (T[1], 7777.0)


def test_ids_that_would_break_a_scrape_give_no_exemplar() -> None:
    r = CollectorRegistry()
    m = LlmMetrics(r)
    m.record([_span(0, trace_id="x" * 200), _span(1, span_id="not hex!"),
              _span(2, model="other", trace_id="")])
    assert _exemplars(r) == {}
    text = _EXPOSITIONS[id(r)].render(OPENMETRICS).decode()
    assert text.endswith("# EOF\n")  # still a valid exposition
    list(text_string_to_metric_families(text))


def test_switched_off_and_the_text_format_carry_none() -> None:
    on, off = CollectorRegistry(), CollectorRegistry()
    LlmMetrics(on).record([_span(0)])
    LlmMetrics(off, exemplars=False).record([_span(0)])
    assert _exemplars(off) == {}
    _exemplars(on)
    assert b" # {" not in _EXPOSITIONS[id(on)].render()  # the text format: as before
    assert b"trace_id" not in generate_latest(on)
