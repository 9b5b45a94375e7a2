"""Every dashboard query, run by a real Prometheus scraping the exporter, gives the right numbers.

A known mix of spans is recorded twice (batch A, then batch B). The query window starts
after Prometheus has scraped all of A from every target and ends after B: no series is
created inside it, and every series of one target is sampled at the same instants, so
rate()/increase() extrapolate every series of a target (replica) by one factor ``f``
whatever the scrape timing — a loaded machine delays scrapes, it does not change the
factor's sharing. Every series' increase is its A value, so shares and averages come out
exact, and absolute rates equal ``f * count / window`` with ``f`` measured per target on
the span counter.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable

import httpx
import pytest

from llm_observe.collector.exporters.prometheus import LATENCY_BUCKETS_MS, TTFT_BUCKETS_MS
from llm_observe.provisioning import links
from llm_observe.provisioning.params import RenderParams
from llm_observe.provisioning.render import DASHBOARD_FILES, render_all
from tests.provisioning.conftest import MetricsSource, PrometheusServer
from tests.provisioning.dashboards import AGENTS_DASHBOARD, load_dashboards, targets_of
from tests.provisioning.genai_alert_checks import EXPECTED_ALERTS, GENAI_CHECKS
from tests.provisioning.scenario import (
    ALL_VARS,
    MIX,
    Results,
    Scenario,
    close_to,
    group_by,
    one_label,
    wait_for,
)


@pytest.fixture(scope="module")
def scenario(metrics_source: MetricsSource, prometheus: PrometheusServer,
             tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    out = tmp_path_factory.mktemp("render")
    render_all(RenderParams(), out)
    client = httpx.Client(base_url=prometheus.url, timeout=10.0)
    costs_a = metrics_source.record(MIX)
    wait_for(client, "sum(llm_spans_total)", len(MIX))
    # From here every scrape holds all of A. The window begins now, and B waits until every
    # target has been scraped inside it: each series' first sample in the window is its A.
    begin = time.time()
    wait_for(client, f'count(timestamp(up{{job="llm-observe"}}) > {begin})',
             len(metrics_source.ports))
    costs_b = metrics_source.record(MIX)
    assert costs_a == costs_b and all(c is not None for c in costs_a)
    wait_for(client, "sum(llm_spans_total)", 2 * len(MIX))
    # the rules are evaluated every scrape: wait until B's alerts are all pending
    wait_for(client, 'count(ALERTS{alertstate="pending"})', len(EXPECTED_ALERTS))
    time.sleep(1.5)  # a few more scrapes after B: the samples rate() extrapolates from
    at = time.time()
    s = Scenario(prom=client, at=at, window_s=round(at - begin, 3), f=0.0,
                 costs=[int(c) for c in costs_a if c is not None],
                 # the agents dashboard reads agent/tool/MCP spans, which this REST-fed
                 # scenario has none of: test_agents_dashboard.py proves it on its own
                 dashboards={uid: d for uid, d in load_dashboards(out).items()
                             if uid != AGENTS_DASHBOARD})
    s.f = sum(s.instant(f"increase(llm_spans_total[{s.window}])").values()) / len(MIX)
    # span i went to replica i % N (conftest.record): its factor is that replica's
    n = len(metrics_source.ports)
    per_replica = one_label(s.instant(
        f"sum by (instance) (increase(llm_spans_total[{s.window}]))"), "instance")
    for k, port in enumerate(metrics_source.ports):
        sent = [x for i, x in enumerate(MIX) if i % n == k]
        for x in sent:
            s.factors[id(x)] = per_replica[f"127.0.0.1:{port}"] / len(sent)
    return s


def _latency_percentiles(r: Results, s: Scenario, field: str, bounds: tuple[int, ...]) -> None:
    for ref, q in (("A", 0.50), ("B", 0.95), ("C", 0.99)):
        expected = {m: s.quantile(q, spans, field, bounds)
                    for m, spans in group_by("model").items()}
        close_to(one_label(r[ref], "model"), expected)
    slow, fast = one_label(r["B"], "model")["claude-3-5-sonnet"], one_label(r["B"], "model")[
        "gpt-4o-mini"]
    assert slow > fast


def _avg_latency_vs_ttft(r: Results, s: Scenario) -> None:
    for ref, field in (("A", "latency_ms_total"), ("B", "latency_ms_ttft")):
        expected = {m: s.total(spans, field) / s.total(spans)
                    for m, spans in group_by("model").items()}
        close_to(one_label(r[ref], "model"), expected)


def _cumulative_cost(r: Results, s: Scenario) -> None:
    expected: dict[str, float] = defaultdict(float)
    for span, cost in zip(MIX, s.costs, strict=True):
        expected[f"{span['service_name']}/{span['model']}"] += 2 * cost / 1e6
    actual = {f"{dict(k)['service_name']}/{dict(k)['model']}": v for k, v in r["A"].items()}
    close_to(actual, expected, rel=1e-12)
    assert sum(actual.values()) == pytest.approx(2 * sum(s.costs) / 1e6, rel=1e-12)


def _cost_share(label: str) -> Callable[[Results, Scenario], None]:
    def check(r: Results, s: Scenario) -> None:
        expected: dict[str, float] = defaultdict(float)
        for span, cost in zip(MIX, s.costs, strict=True):
            expected[span[label]] += 2 * cost / 1e6
        close_to(one_label(r["A"], label), expected, rel=1e-12)
    return check


def _success_vs_error(r: Results, s: Scenario) -> None:
    close_to(one_label(r["A"], "status"),
             {k: s.total(spans) / s.window_s for k, spans in group_by("status").items()})


def _finish_reasons(r: Results, s: Scenario) -> None:
    close_to(one_label(r["A"], "finish_reason"),
             {k: s.total(spans) for k, spans in group_by("finish_reason").items() if k})


def _retry_rate(r: Results, s: Scenario) -> None:
    (value,) = r["A"].values()
    share = s.total([x for x in MIX if x["retry_count"] > 0]) / s.total(MIX)
    assert value == pytest.approx(100 * share, rel=1e-9)


def _per_service_rate(flag: str) -> Callable[[Results, Scenario], None]:
    def check(r: Results, s: Scenario) -> None:
        close_to(one_label(r["A"], "service_name"),
                 {k: s.total([x for x in spans if x[flag]]) / s.window_s
                  for k, spans in group_by("service_name").items()})
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
    **GENAI_CHECKS,
}


# ---------------------------------------------------------------- tests


def test_extrapolation_factor_is_bounded(scenario: Scenario,
                                         metrics_source: MetricsSource) -> None:
    # increase() extrapolates past the first/last sample by at most ~1 scrape each side
    assert 1.0 <= scenario.f < 2.0
    # one factor per replica (two replicas scraped alike may share a value)
    assert len(set(scenario.factors.values())) <= len(metrics_source.ports)
    assert all(1.0 <= f < 2.0 for f in scenario.factors.values())


def test_every_panel_has_a_numeric_check(scenario: Scenario) -> None:
    panels = {(uid, p["title"]) for uid, d in scenario.dashboards.items() for p in d["panels"]}
    assert panels == set(CHECKS)
    assert len(scenario.dashboards) == len(DASHBOARD_FILES) - 1 == 5


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
    result = one_label(scenario.instant(scenario.expr(panel["targets"][0]["expr"], only_chat)),
                        "model")
    expected: dict[str, float] = defaultdict(float)
    for span, cost in zip(MIX, scenario.costs, strict=True):
        if span["service_name"] == "chat-api":
            expected[span["model"]] += 2 * cost / 1e6
    close_to(result, expected, rel=1e-12)


def test_template_variables_list_the_recorded_labels(scenario: Scenario) -> None:
    expected = {"service": {"chat-api", "rag-worker"}, "provider": {"openai", "anthropic"},
                "model": {"gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet"}}
    for uid, dashboard in scenario.dashboards.items():
        values = {}
        for var in dashboard["templating"]["list"]:
            m = re.fullmatch(r"label_values\((.+), (\w+)\)", var["query"]["query"])
            assert m, var
            selector = scenario.expr(m.group(1))
            r = scenario.prom.get(f"/api/v1/label/{m.group(2)}/values",
                                  params={"match[]": selector}).json()
            values[var["name"]] = set(r["data"])
        if uid == "llm-genai-semconv-dashboard":  # the GenAI metrics carry no service
            assert values == {k: v for k, v in expected.items() if k != "service"}
        else:
            assert values == expected, uid


def _grafana_tags(model: str, service: str) -> str:
    return f'model="{model}", service_name="{service}"'


def test_trace_to_metrics_queries_answer_for_the_span_model(scenario: Scenario) -> None:
    """The Tempo datasource's "Metrics for this span" queries, with $__tags filled in."""
    model = "claude-3-5-sonnet"
    group = [x for x in MIX if x["model"] == model]
    costs = [c for x, c in zip(MIX, scenario.costs, strict=True) if x["model"] == model]
    expected = {
        "Latency p95 of this model (ms)":
            scenario.quantile(0.95, group, "latency_ms_total", LATENCY_BUCKETS_MS),
        "TTFT p95 of this model (ms)":
            scenario.quantile(0.95, group, "latency_ms_ttft", TTFT_BUCKETS_MS),
        "Error share of this model (%)":
            100 * scenario.total([x for x in group if x["status"] == "error"])
            / scenario.total(group),
        "Cumulative cost of this model (USD)": 2 * sum(costs) / 1e6,
    }
    tags = _grafana_tags("claude-3-5-sonnet", "rag-worker")
    for q in links.TRACE_METRIC_QUERIES:
        # The links' fixed [5m] reaches back past batch A; the scenario's window is where
        # every series of a replica shares one extrapolation factor (module docstring).
        query = q["query"].replace("[5m]", f"[{scenario.window}]")
        (value,) = scenario.instant(query.replace("$__tags", tags)).values()
        assert value == pytest.approx(expected[q["name"]], rel=1e-6), q["name"]
        # a span without model/service attributes leaves $__tags empty: still valid PromQL
        assert scenario.instant(q["query"].replace("$__tags", "")), q["name"]


def test_genai_metrics_agree_with_the_spec_series(scenario: Scenario) -> None:
    """The same spans, both families, as Prometheus stored them: equal per model."""
    q = scenario.instant
    genai = {(dict(k)["gen_ai_request_model"], dict(k)["gen_ai_token_type"]): v for k, v in q(
        "sum by (gen_ai_request_model, gen_ai_token_type) (gen_ai_client_token_usage_sum)").items()}
    kind = {"prompt": "input", "completion": "output"}
    spec = {(dict(k)["model"], kind[dict(k)["token_type"]]): v
            for k, v in q("sum by (model, token_type) (llm_tokens_total)").items()}
    assert genai == spec and len(spec) == 6
    ops = one_label(q("sum by (gen_ai_request_model) "
                      "(gen_ai_client_operation_duration_seconds_count)"), "gen_ai_request_model")
    assert ops == one_label(q("sum by (model) (llm_spans_total)"), "model")
    seconds = one_label(q("1000 * sum by (gen_ai_request_model) "
                          "(gen_ai_client_operation_duration_seconds_sum)"), "gen_ai_request_model")
    close_to(seconds, one_label(q("sum by (model) (llm_latency_ms_total_sum)"), "model"))


def test_every_replica_is_a_target_and_chains_add_up_across_replicas(
        scenario: Scenario, metrics_source: MetricsSource) -> None:
    up = scenario.instant('up{job="llm-observe"}')
    assert sorted(dict(k)["instance"] for k in up) == sorted(
        f"127.0.0.1:{p}" for p in metrics_source.ports)
    assert set(up.values()) == {1.0}
    # one tool-call chain whose turns land on every replica in turn (with Redis, one chain)
    trace = f"{len(metrics_source.ports)}-chain-trace"
    seen = []
    for turn, api in enumerate(metrics_source.apis * 2):
        finish = "tool_calls" if turn < 2 * len(metrics_source.apis) - 1 else "stop"
        r = httpx.post(f"{api}/v1/tool-call/track", timeout=10, json={
            "trace_id": trace, "cost_usd_micro": 100 + turn, "finish_reason": finish})
        assert r.status_code == 200, r.text
        seen.append(r.json()["cumulative_cost_usd_micro"])
    steps = 2 * len(metrics_source.apis)
    assert seen == [sum(100 + t for t in range(n + 1)) for n in range(steps)]
