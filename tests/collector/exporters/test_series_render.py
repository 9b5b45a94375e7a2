"""The kept-lines exposition is byte for byte prometheus_client's full render, in both formats,
scrape after scrape, and the global series budget bounds it."""

from __future__ import annotations

import random
import time

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary, generate_latest
from prometheus_client import metrics as client_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.samples import Exemplar

from llm_observe.collector.exporters.exposition import Exposition
from llm_observe.collector.exporters.prometheus import LlmMetrics
from llm_observe.collector.exporters.series_render import OPENMETRICS, TEXT, go_float
from llm_observe.span import LlmSpan


class _Stats:
    """A scrape-time collector, like the pipeline's self-metrics."""

    def __init__(self) -> None:
        self.n = 0.0

    def collect(self) -> list[object]:
        c = CounterMetricFamily("x_stats", "stats", labels=["k"])
        c.add_metric(["a"], self.n)
        return [c, GaugeMetricFamily("x_level", "level", value=-0.0)]


def _registry() -> tuple[CollectorRegistry, LlmMetrics, dict[str, object]]:
    r = CollectorRegistry()
    m = LlmMetrics(r)
    extra: dict[str, object] = {
        "gauge": Gauge("x_queue", "queue\nwith a \\ newline", ["q"], registry=r),
        "plain": Counter("x_plain", "unlabelled", registry=r),
        "hist": Histogram("x_seconds", "h", ["a", "z"], buckets=(0.001, 0.5, 1e7), unit="seconds",
                          registry=r),
        "summary": Summary("x_summary", "s", ["k"], registry=r),
        "stats": _Stats(),
    }
    r.register(extra["stats"])  # type: ignore[arg-type]
    return r, m, extra


def _spans(rng: random.Random, n: int) -> list[LlmSpan]:
    return [LlmSpan(model=rng.choice(["gpt-4o", 'we"ird\\model', "m\u00e9", "m{x}"]),
                    provider=rng.choice(["openai", "anthropic"]),
                    service_name=f"svc-{rng.randrange(5)}",
                    prompt_tokens=rng.randrange(0, 5000), completion_tokens=rng.randrange(0, 900),
                    latency_ms_total=rng.randrange(1, 700_000),
                    latency_ms_ttft=rng.choice([None, rng.randrange(1, 90_000)]),
                    finish_reason=rng.choice(["stop", "length", None]),
                    status=rng.choice(["success", "success", "error"]),
                    error_type=rng.choice([None, "timeout"]),
                    cost_usd_micro=rng.choice([None, rng.randrange(0, 10**9)]),
                    retry_count=rng.randrange(0, 2),
                    trace_id=f"{rng.getrandbits(128):032x}", span_id=f"{rng.getrandbits(64):016x}")
            for _ in range(n)]


def _full(registry: CollectorRegistry, fmt: str) -> bytes:
    return generate_latest(registry) if fmt == TEXT else generate_openmetrics(registry)


@pytest.mark.parametrize("fmt", [TEXT, OPENMETRICS])
def test_every_scrape_equals_a_fresh_full_render(fmt: str) -> None:
    r, m, extra = _registry()
    expo = Exposition(r)  # registered last: the library renders its family last too
    rng = random.Random(7)
    gauge, hist = extra["gauge"], extra["hist"]
    for step in range(6):
        m.record(_spans(rng, 50))
        gauge.labels(f"q{step % 3}").set(rng.choice([1.5, -0.0, 0.0, float("nan"), 1e21]))  # type: ignore[attr-defined]
        hist.labels("x", "y").observe(rng.random() * 2)  # type: ignore[attr-defined]
        extra["summary"].labels("k").observe(3)  # type: ignore[attr-defined]
        extra["stats"].n += 1  # type: ignore[attr-defined]
        if step == 2:
            extra["plain"].inc(2.5)  # type: ignore[attr-defined]
            hist.labels("x", "y").observe(0.2, exemplar={"trace_id": "ab" * 16})  # type: ignore[attr-defined]
        if step == 4:
            gauge.remove("q0")  # type: ignore[attr-defined]
        assert expo.render(fmt) == _full(r, fmt), f"scrape {step}"


def test_created_lines_switched_off_and_on_still_match() -> None:
    r, m, _ = _registry()
    expo = Exposition(r)
    m.record(_spans(random.Random(1), 20))
    assert expo.render() == generate_latest(r)
    client_metrics.disable_created_metrics()
    try:
        assert b"_created" not in expo.render()
        assert expo.render() == generate_latest(r)
        assert expo.render(OPENMETRICS) == generate_openmetrics(r)
    finally:
        client_metrics.enable_created_metrics()
    assert expo.render() == generate_latest(r)


def test_the_series_budget_leaves_label_sets_out_and_counts_them() -> None:
    r = CollectorRegistry()
    c = Counter("x_hits", "hits", ["k"], registry=r)
    for i in range(10):
        c.labels(f"k{i}").inc()
    expo = Exposition(r, max_series=7)  # each label set is 2 lines (_total, _created)
    body = expo.render().decode()
    assert body.count("x_hits_total{") == 3  # 6 lines fit, the 4th set would be the 8th line
    assert "llm_observe_scrape_series_left_out_total 14.0" in body
    # counted per scrape: a scrape over budget adds what it left out
    assert "llm_observe_scrape_series_left_out_total 28.0" in expo.render().decode()


def test_a_budget_full_registry_renders_within_a_second_and_again_faster() -> None:
    r, m, spans = _budget_full()
    expo = Exposition(r)
    began = time.process_time()
    first = expo.render()
    cold = time.process_time() - began
    assert first.count(b"\n") > 250_000  # the label-set budget is full
    m.record(spans[:500])  # one tenth of the label sets change between scrapes
    began = time.process_time()
    second = expo.render()
    warm = time.process_time() - began
    assert second == generate_latest(r)
    assert cold < 2.0 and warm < 1.0, (cold, warm)  # CPU time: a shared machine's load aside
    assert warm < cold


def test_go_float_matches_the_library() -> None:
    from prometheus_client.utils import floatToGoString
    for v in (0.0, 1.0, 1e6, 1234567.0, 0.1, 1e21, 2.5e-7, float("inf"), 123456789.123):
        assert go_float(v) == floatToGoString(v)


def test_exemplar_text_matches_openmetrics() -> None:
    r = CollectorRegistry()
    c = Counter("x_cost", "cost", ["m"], registry=r)
    c.labels("a").inc(3, exemplar={"trace_id": 'q"\\\n', "span_id": "01"})
    c.labels("b")._value.set_exemplar(Exemplar({"trace_id": "f" * 32}, 2.0, 1750000000.123))
    assert Exposition(r).render(OPENMETRICS) == generate_openmetrics(r)


def _budget_full() -> tuple[CollectorRegistry, LlmMetrics, list[LlmSpan]]:
    r = CollectorRegistry()
    m = LlmMetrics(r)
    spans = [LlmSpan(model=f"m{i}", provider="openai", service_name=f"s{j}", prompt_tokens=10,
                     completion_tokens=5, latency_ms_total=900, latency_ms_ttft=100,
                     finish_reason="stop") for i in range(500) for j in range(10)]
    for k in range(0, len(spans), 1000):
        m.record(spans[k:k + 1000])
    return r, m, spans


@pytest.mark.parametrize("fmt", [TEXT, OPENMETRICS])
def test_a_scrape_after_prepare_matches_and_costs_less_than_a_first_one(fmt: str) -> None:
    r, m, spans = _budget_full()
    cold = Exposition(r)
    began = time.process_time()
    cold.render(fmt)
    first = time.process_time() - began
    r.unregister(cold)
    expo = Exposition(r)
    expo.prepare(fmt)  # what the scrape server does while a client fills the budget
    m.record(spans[:500])  # one tenth of the label sets change before the scrape
    began = time.process_time()
    body = expo.render(fmt)
    after = time.process_time() - began
    assert body == _full(r, fmt)
    assert after < first * 0.7, (after, first)  # ~1/3 measured: new sets cost ~3x changed


def test_prepare_changes_no_scrape() -> None:
    r, m, _ = _registry()
    expo = Exposition(r)
    m.record(_spans(random.Random(3), 30))
    expo.prepare(OPENMETRICS)
    assert expo.render(TEXT) == _full(r, TEXT)  # kept OpenMetrics lines, a text scrape
    m.record(_spans(random.Random(4), 30))
    expo.prepare(TEXT)
    assert expo.render(OPENMETRICS) == _full(r, OPENMETRICS)


def test_pieces_are_the_exposition_in_order() -> None:
    r, m, _ = _registry()
    m.record(_spans(random.Random(5), 80))
    expo = Exposition(r)
    pieces = expo.render_pieces(TEXT, size=2048)
    assert len(pieces) > 3
    assert b"".join(pieces) == expo.render(TEXT) == _full(r, TEXT)
    assert all(len(p) >= 2048 for p in pieces[:-1])
    assert max(len(p) for p in pieces) < 2048 + 8192  # ends at the first set past the size


def test_a_prepare_stopped_midway_changes_no_scrape() -> None:
    """The scrape server stops a pre-render when a scrape waits: what it rendered is kept,
    the rest is the scrape's, and the scrape is the library's bytes all the same."""
    r, m, _ = _registry()
    m.record(_spans(random.Random(6), 200))
    expo = Exposition(r)
    calls: list[int] = []

    def pause() -> bool:
        calls.append(1)
        return len(calls) >= 3

    assert expo.prepare(TEXT, pause) is False
    assert len(calls) == 3
    assert expo.render(TEXT) == _full(r, TEXT)
    m.record(_spans(random.Random(7), 200))
    assert expo.prepare(OPENMETRICS, lambda: False) is True
    assert expo.render(OPENMETRICS) == _full(r, OPENMETRICS)
    assert expo.render(TEXT) == _full(r, TEXT)
