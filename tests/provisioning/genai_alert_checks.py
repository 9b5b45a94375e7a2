"""Expected numbers of the GenAI-metrics dashboard and of every dashboard's Alerts panel.

The GenAI dashboard reads only ``gen_ai_client_*``: its panels must give the numbers the
span mix implies, in the conventions' units (seconds, tokens). The Alerts panels list
what the rules, rendered with ``conftest.DASHBOARD_ALERTS``, hold pending for the mix.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from llm_observe.collector.exporters.genai import DURATION_BUCKETS_S
from tests.provisioning.scenario import (
    MIX,
    Results,
    Scenario,
    close_to,
    group_by,
    one_label,
)

GENAI = "llm-genai-semconv-dashboard"
MODELS = ("gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet")

# (dashboard label, alert, the label that tells its rows apart, values) with the thresholds
# of DASHBOARD_ALERTS; each line says why the mix trips it.
_ALERTS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    # every service spent more than 1e-6 USD/h
    ("llm-cost-dashboard", "LLMSpendOverBudget", "service_name", ("chat-api", "rag-worker")),
    # one error per model: 12.5% (gpt-4o) and 16.7% > 5%
    ("llm-error-retry-dashboard", "LLMErrorRateHigh", "model", MODELS),
    # calls with retries: 2 of 8, 1 of 6, 1 of 6 > 10%
    ("llm-error-retry-dashboard", "LLMRetryRateHigh", "model", MODELS),
    # p95 latency > 1000 ms except gpt-4o-mini (925 ms in the 750-1000 bucket)
    ("llm-latency-ttft-dashboard", "LLMLatencyP95High", "model", ("gpt-4o", "claude-3-5-sonnet")),
    # p95 TTFT > 500 ms except gpt-4o-mini (170 ms)
    ("llm-latency-ttft-dashboard", "LLMTTFTP95High", "model", ("gpt-4o", "claude-3-5-sonnet")),
    # injection and PII spans in both services (threshold 0)
    ("llm-security-safety-dashboard", "LLMInjectionBurst", "service_name",
     ("chat-api", "rag-worker")),
    ("llm-security-safety-dashboard", "LLMPIIBurst", "service_name", ("chat-api", "rag-worker")),
)
EXPECTED_ALERTS = {(board, name, value) for board, name, _, values in _ALERTS
                   for value in values}


def _alert_rows(r: Results) -> set[tuple[str, str, str]]:
    rows = set()
    for series in r["A"]:
        labels = dict(series)
        assert labels["alertstate"] == "pending", labels
        key = next(k for board, name, k, _ in _ALERTS if name == labels["alertname"])
        rows.add((labels["dashboard"], labels["alertname"], labels[key]))
    return rows


def _alerts_of(uid: str) -> Callable[[Results, Scenario], None]:
    def check(r: Results, s: Scenario) -> None:
        expected = {row for row in EXPECTED_ALERTS if uid == GENAI or row[0] == uid}
        assert _alert_rows(r) == expected
    return check


def _ops_per_second(r: Results, s: Scenario) -> None:
    close_to(one_label(r["A"], "gen_ai_request_model"),
             {m: s.total(spans) / s.window_s for m, spans in group_by("model").items()})


def _error_share(r: Results, s: Scenario) -> None:
    errors = s.total([x for x in MIX if x["status"] == "error"])
    # the REST record carries no error type: the conventions' fallback _OTHER
    close_to(one_label(r["A"], "error_type"), {"_OTHER": 100 * errors / s.total(MIX)})


def _seconds_percentiles(field: str) -> Callable[[Results, Scenario], None]:
    def check(r: Results, s: Scenario) -> None:
        for ref, q in (("A", 0.50), ("B", 0.95)):
            expected = {m: s.quantile(q, spans, field, DURATION_BUCKETS_S, scale=1000)
                        for m, spans in group_by("model").items()}
            close_to(one_label(r[ref], "gen_ai_request_model"), expected)
    return check


def _tokens_per_second(r: Results, s: Scenario) -> None:
    expected: dict[str, float] = defaultdict(float)
    for span in MIX:
        expected[f"{span['model']}/input"] += s.w(span) * span["prompt_tokens"] / s.window_s
        expected[f"{span['model']}/output"] += s.w(span) * span["completion_tokens"] / s.window_s
    actual = {f"{dict(k)['gen_ai_request_model']}/{dict(k)['gen_ai_token_type']}": v
              for k, v in r["A"].items()}
    close_to(actual, expected)


def _tokens_per_operation(r: Results, s: Scenario) -> None:
    # a span that reported no usage (0) is not observed
    inputs = [x for x in MIX if x["prompt_tokens"]]
    outputs = [x for x in MIX if x["completion_tokens"]]
    close_to(one_label(r["A"], "gen_ai_token_type"),
             {"input": s.total(inputs, "prompt_tokens") / s.total(inputs),
              "output": s.total(outputs, "completion_tokens") / s.total(outputs)})


GENAI_CHECKS: dict[tuple[str, str], Callable[[Results, Scenario], None]] = {
    (GENAI, "Operations per second by model"): _ops_per_second,
    (GENAI, "Error share by error type (%)"): _error_share,
    (GENAI, "Operation duration p50 / p95 per model (s)"):
        _seconds_percentiles("latency_ms_total"),
    (GENAI, "Time to first chunk p50 / p95 per model (s)"):
        _seconds_percentiles("latency_ms_ttft"),
    (GENAI, "Tokens per second by model and type"): _tokens_per_second,
    (GENAI, "Average tokens per operation by type"): _tokens_per_operation,
    **{(uid, "Alerts"): _alerts_of(uid) for uid in (
        GENAI, "llm-cost-dashboard", "llm-error-retry-dashboard", "llm-latency-ttft-dashboard",
        "llm-security-safety-dashboard")},
}
