"""Every dashboard query, run by a real Prometheus scraping the exporter, gives the right numbers.

A known mix of spans is recorded twice (batch A, then batch B after Prometheus
has scraped A). All series exist from A on and every series' increase from A to
B equals its A value, so Prometheus' rate()/increase() extrapolation scales
every series by the same factor ``f``: shares and averages come out exact, and
absolute rates equal ``f * count / window``. ``f`` itself is measured once on
the span counter and bounded.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from llm_observe.collector.exporters.prometheus import LATENCY_BUCKETS_MS, TTFT_BUCKETS_MS
from llm_observe.provisioning import links
from llm_observe.provisioning.params import RenderParams
from llm_observe.provisioning.render import DASHBOARD_FILES, render_all
from tests.provisioning.conftest import MetricsSource, PrometheusServer
from tests.provisioning.dashboards import load_dashboards, targets_of


def _span(service: str, model: str, provider: str, lat: int, ttft: int, *,
          finish: str | None = "stop", error: bool = False, retries: int = 0,
          pii: bool = False, inj: bool = False, pt: int = 1200, ct: int = 300) -> dict[str, Any]:
    return {"service_name": service, "model": model, "provider": provider,
            "latency_ms_total": lat, "latency_ms_ttft": ttft,
            "finish_reason": None if error else finish,
            "status": "error" if error else "success", "retry_count": retries,
            "pii_detected": pii, "injection_attempt": inj,
            "prompt_tokens": 0 if error else pt, "completion_tokens": 0 if error else ct}


def _mix() -> list[dict[str, Any]]:
    c4, cm, rg = ("chat-api", "gpt-4o", "openai"), ("chat-api", "gpt-4o-mini", "openai"), \
        ("rag-worker", "claude-3-5-sonnet", "anthropic")
    return [
        _span(*c4, 420, 90), _span(*c4, 650, 120, pii=True), _span(*c4, 800, 150, pt=3000),
        _span(*c4, 1100, 200, finish="length", ct=4096), _span(*c4, 1300, 260, retries=2),
        _span(*c4, 2200, 300, finish="tool_calls", inj=True),
        _span(*c4, 4800, 700, pii=True, pt=9000, ct=1500),
        _span(*c4, 9000, 1200, error=True, retries=3),
        _span(*rg, 900, 300, inj=True), _span(*rg, 1500, 450, pt=20000, ct=800),
        _span(*rg, 2100, 500, finish="length", ct=4096), _span(*rg, 2600, 800, pii=True),
        _span(*rg, 3400, 900, finish="content_filter", retries=1, inj=True),
        _span(*rg, 12000, 2500, error=True),
        _span(*cm, 120, 40, pt=300, ct=50), _span(*cm, 180, 60), _span(*cm, 240, 80),
        _span(*cm, 310, 95, finish="tool_calls"), _span(*cm, 500, 150, pt=5000),
        _span(*cm, 760, 200, error=True, retries=1),
    ]


MIX = _mix()
ALL_VARS = {"service": ".*", "provider": ".*", "model": ".*"}


@dataclass
class Scenario:
    prom: httpx.Client
    at: float  # evaluation time (unix s), the same for every query
    window_s: float  # substituted for $__range and $__rate_interval
    f: float  # the common extrapolation factor of rate()/increase()
    costs: list[int]  # cost_usd_micro of each MIX span as recorded
    dashboards: dict[str, dict[str, Any]]

    @property
    def window(self) -> str:
        return f"{round(self.window_s * 1000)}ms"

    def expr(self, text: str, variables: dict[str, str] | None = None) -> str:
        """Grafana's substitutions: built-in intervals first, then template variables."""
        out = (text.replace("$__rate_interval", self.window).replace("$__range", self.window)
               .replace("$__interval", "1s"))
        for name, value in (variables or ALL_VARS).items():
            out = out.replace(f"${name}", value)
        assert "$" not in out, out
        return out

    def instant(self, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
        r = self.prom.post("/api/v1/query", data={"query": expr, "time": str(self.at)})
        body = r.json()
        assert r.status_code == 200 and body["status"] == "success", (expr, body)
        return {tuple(sorted(s["metric"].items())): float(s["value"][1])
                for s in body["data"]["result"]}

    def series_count(self, expr: str) -> int:
        r = self.prom.post("/api/v1/query_range", data={
            "query": expr, "start": str(self.at - 10), "end": str(self.at), "step": "1"})
        body = r.json()
        assert r.status_code == 200 and body["status"] == "success", (expr, body)
        return len(body["data"]["result"])


def _wait_for(client: httpx.Client, expr: str, value: float, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    seen: Any = None
    while time.monotonic() < deadline:
        result = client.get("/api/v1/query", params={"query": expr}).json()["data"]["result"]
        seen = result[0]["value"][1] if result else None
        if seen is not None and float(seen) == value:
            return
        time.sleep(0.2)
    raise AssertionError(f"{expr} never reached {value} (last {seen})")


@pytest.fixture(scope="module")
def scenario(metrics_source: MetricsSource, prometheus: PrometheusServer,
             tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    out = tmp_path_factory.mktemp("render")
    render_all(RenderParams(), out)
    client = httpx.Client(base_url=prometheus.url, timeout=10.0)
    begin = time.time()
    costs_a = metrics_source.record(MIX)
    _wait_for(client, "sum(llm_spans_total)", len(MIX))
    costs_b = metrics_source.record(MIX)
    assert costs_a == costs_b and all(c is not None for c in costs_a)
    _wait_for(client, "sum(llm_spans_total)", 2 * len(MIX))
    time.sleep(1.5)  # a few more scrapes after B: the samples rate() extrapolates from
    at = time.time()
    s = Scenario(prom=client, at=at, window_s=math.ceil(at - begin) + 2.0, f=0.0,
                 costs=[int(c) for c in costs_a if c is not None],
                 dashboards=load_dashboards(out))
    s.f = sum(s.instant(f"increase(llm_spans_total[{s.window}])").values()) / len(MIX)
    return s


# ---------------------------------------------------------------- expectations


def _quantile(q: float, values: list[int], bounds: tuple[int, ...]) -> float:
    """Prometheus' histogram_quantile on the buckets these values fall in (linear in a bucket)."""
    counts = [sum(1 for v in values if v <= b) for b in bounds]
    rank = q * len(values)
    for i, cum in enumerate(counts):
        if cum >= rank:
            below = counts[i - 1] if i else 0
            start = bounds[i - 1] if i else 0.0
            return start + (bounds[i] - start) * (rank - below) / (cum - below)
    return float(bounds[-1])


def _by(key: str) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in MIX:
        groups[span[key]].append(span)
    return groups


def _one_label(result: dict[tuple[tuple[str, str], ...], float], label: str) -> dict[str, float]:
    return {dict(k)[label]: v for k, v in result.items()}


def _close(actual: dict[str, float], expected: dict[str, float], rel: float = 1e-6) -> None:
    assert set(actual) == set(expected), (actual, expected)
    for k, v in expected.items():
        assert actual[k] == pytest.approx(v, rel=rel, abs=1e-9), (k, actual, expected)


Results = dict[str, dict[tuple[tuple[str, str], ...], float]]  # refId -> series -> value


def _latency_percentiles(r: Results, s: Scenario, field: str, bounds: tuple[int, ...]) -> None:
    for ref, q in (("A", 0.50), ("B", 0.95), ("C", 0.99)):
        expected = {m: _quantile(q, [x[field] for x in spans], bounds)
                    for m, spans in _by("model").items()}
        _close(_one_label(r[ref], "model"), expected)
    slow, fast = _one_label(r["B"], "model")["claude-3-5-sonnet"], _one_label(r["B"], "model")[
        "gpt-4o-mini"]
    assert slow > fast


def _avg_latency_vs_ttft(r: Results, s: Scenario) -> None:
    for ref, field in (("A", "latency_ms_total"), ("B", "latency_ms_ttft")):
        expected = {m: sum(x[field] for x in spans) / len(spans)
                    for m, spans in _by("model").items()}
        _close(_one_label(r[ref], "model"), expected, rel=1e-9)


def _cumulative_cost(r: Results, s: Scenario) -> None:
    expected: dict[str, float] = defaultdict(float)
    for span, cost in zip(MIX, s.costs, strict=True):
        expected[f"{span['service_name']}/{span['model']}"] += 2 * cost / 1e6
    actual = {f"{dict(k)['service_name']}/{dict(k)['model']}": v for k, v in r["A"].items()}
    _close(actual, expected, rel=1e-12)
    assert sum(actual.values()) == pytest.approx(2 * sum(s.costs) / 1e6, rel=1e-12)


def _cost_share(label: str) -> Callable[[Results, Scenario], None]:
    def check(r: Results, s: Scenario) -> None:
        expected: dict[str, float] = defaultdict(float)
        for span, cost in zip(MIX, s.costs, strict=True):
            expected[span[label]] += 2 * cost / 1e6
        _close(_one_label(r["A"], label), expected, rel=1e-12)
    return check


def _success_vs_error(r: Results, s: Scenario) -> None:
    counts = Counter(span["status"] for span in MIX)
    _close(_one_label(r["A"], "status"),
           {k: s.f * n / s.window_s for k, n in counts.items()})


def _finish_reasons(r: Results, s: Scenario) -> None:
    counts = Counter(span["finish_reason"] for span in MIX if span["finish_reason"])
    _close(_one_label(r["A"], "finish_reason"), {k: s.f * n for k, n in counts.items()})


def _retry_rate(r: Results, s: Scenario) -> None:
    (value,) = r["A"].values()
    share = sum(1 for span in MIX if span["retry_count"] > 0) / len(MIX)
    assert value == pytest.approx(100 * share, rel=1e-9)


def _per_service_rate(flag: str) -> Callable[[Results, Scenario], None]:
    def check(r: Results, s: Scenario) -> None:
        counts = Counter(span["service_name"] for span in MIX if span[flag])
        _close(_one_label(r["A"], "service_name"),
               {k: s.f * n / s.window_s for k, n in counts.items()})
    return check


def _total_violations(r: Results, s: Scenario) -> None:
    (value,) = r["A"].values()
    assert value == 2 * sum(int(x["pii_detected"]) + int(x["injection_attempt"]) for x in MIX)


CHECKS: dict[tuple[str, str], Callable[[Results, Scenario], None]] = {
    ("llm-latency-ttft-dashboard", "Latency percentiles per model (p50 / p95 / p99)"):
        lambda r, s: _latency_percentiles(r, s, "latency_ms_total", LATENCY_BUCKETS_MS),
    ("llm-latency-ttft-dashboard", "TTFT percentiles per model (p50 / p95 / p99)"):
        lambda r, s: _latency_percentiles(r, s, "latency_ms_ttft", TTFT_BUCKETS_MS),
    ("llm-latency-ttft-dashboard", "Average latency vs average TTFT per model"):
        _avg_latency_vs_ttft,
    ("llm-cost-dashboard", "Cumulative cost per service and model (USD)"): _cumulative_cost,
    ("llm-cost-dashboard", "Cost share by model"): _cost_share("model"),
    ("llm-cost-dashboard", "Cost share by service"): _cost_share("service_name"),
    ("llm-error-retry-dashboard", "Success vs error rate"): _success_vs_error,
    ("llm-error-retry-dashboard", "Finish reason distribution"): _finish_reasons,
    ("llm-error-retry-dashboard", "Retry rate (%)"): _retry_rate,
    ("llm-security-safety-dashboard", "PII detection rate per second by service"):
        _per_service_rate("pii_detected"),
    ("llm-security-safety-dashboard", "Injection attempt rate per second by service"):
        _per_service_rate("injection_attempt"),
    ("llm-security-safety-dashboard", "Total security violations"): _total_violations,
}


# ---------------------------------------------------------------- tests


def test_extrapolation_factor_is_bounded(scenario: Scenario) -> None:
    # increase() extrapolates past the first/last sample by at most ~1 scrape each side
    assert 1.0 <= scenario.f < 2.0


def test_every_panel_has_a_numeric_check(scenario: Scenario) -> None:
    panels = {(uid, p["title"]) for uid, d in scenario.dashboards.items() for p in d["panels"]}
    assert panels == set(CHECKS)
    assert len(scenario.dashboards) == len(DASHBOARD_FILES) == 4


@pytest.mark.parametrize("key", sorted(CHECKS), ids=lambda k: f"{k[0]}:{k[1]}")
def test_panel_queries_return_the_recorded_numbers(scenario: Scenario,
                                                   key: tuple[str, str]) -> None:
    uid, title = key
    (panel,) = [p for p in scenario.dashboards[uid]["panels"] if p["title"] == title]
    results: Results = {}
    for target in targets_of(panel):
        results[target["refId"]] = scenario.instant(scenario.expr(target["expr"]))
        assert results[target["refId"]], f"{title} {target['refId']}: empty result"
        if target.get("range"):  # what a time-series panel asks Grafana for
            assert scenario.series_count(scenario.expr(target["expr"])) > 0
    CHECKS[key](results, scenario)


def test_selecting_one_service_filters_the_cost_panel(scenario: Scenario) -> None:
    (panel,) = [p for p in scenario.dashboards["llm-cost-dashboard"]["panels"]
                if p["title"] == "Cost share by model"]
    only_chat = {**ALL_VARS, "service": "chat-api"}
    result = _one_label(scenario.instant(scenario.expr(panel["targets"][0]["expr"], only_chat)),
                        "model")
    expected: dict[str, float] = defaultdict(float)
    for span, cost in zip(MIX, scenario.costs, strict=True):
        if span["service_name"] == "chat-api":
            expected[span["model"]] += 2 * cost / 1e6
    _close(result, expected, rel=1e-12)


def test_template_variables_list_the_recorded_labels(scenario: Scenario) -> None:
    for dashboard in scenario.dashboards.values():
        values = {}
        for var in dashboard["templating"]["list"]:
            m = re.fullmatch(r"label_values\((.+), (\w+)\)", var["query"]["query"])
            assert m, var
            selector = scenario.expr(m.group(1))
            r = scenario.prom.get(f"/api/v1/label/{m.group(2)}/values",
                                  params={"match[]": selector}).json()
            values[var["name"]] = set(r["data"])
        assert values == {"service": {"chat-api", "rag-worker"},
                          "provider": {"openai", "anthropic"},
                          "model": {"gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet"}}


def _grafana_tags(model: str, service: str) -> str:
    return f'model="{model}", service_name="{service}"'


def test_trace_to_metrics_queries_answer_for_the_span_model(scenario: Scenario) -> None:
    """The Tempo datasource's "Metrics for this span" queries, with $__tags filled in."""
    model = "claude-3-5-sonnet"
    group = [x for x in MIX if x["model"] == model]
    costs = [c for x, c in zip(MIX, scenario.costs, strict=True) if x["model"] == model]
    expected = {
        "Latency p95 of this model (ms)":
            _quantile(0.95, [x["latency_ms_total"] for x in group], LATENCY_BUCKETS_MS),
        "TTFT p95 of this model (ms)":
            _quantile(0.95, [x["latency_ms_ttft"] for x in group], TTFT_BUCKETS_MS),
        "Error share of this model (%)":
            100 * sum(1 for x in group if x["status"] == "error") / len(group),
        "Cumulative cost of this model (USD)": 2 * sum(costs) / 1e6,
    }
    tags = _grafana_tags("claude-3-5-sonnet", "rag-worker")
    for q in links.TRACE_METRIC_QUERIES:
        (value,) = scenario.instant(q["query"].replace("$__tags", tags)).values()
        assert value == pytest.approx(expected[q["name"]], rel=1e-6), q["name"]
        # a span without model/service attributes leaves $__tags empty: still valid PromQL
        assert scenario.instant(q["query"].replace("$__tags", "")), q["name"]
