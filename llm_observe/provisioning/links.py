"""Grafana Explore links from a metrics panel to the matching spans in Tempo.

Grafana's Explore URL carries its state as JSON in the ``panes`` query
parameter (Grafana >= 10, ``schemaVersion=1``). The JSON is percent-encoded
here, while Grafana's own data-link variables (``${__from}``, a series label)
stay literal so Grafana substitutes them when the user clicks.
"""

from __future__ import annotations

import json
from urllib.parse import quote

# Span attribute holding the model (OpenTelemetry GenAI semconv, see semconv.py).
MODEL_ATTRIBUTE = "gen_ai.request.model"

# Trace -> metrics (Grafana's Tempo datasource "tracesToMetrics"): span attribute
# -> metric label; Grafana joins them as `label="value", ...` into $__tags.
TRACE_METRIC_TAGS: tuple[dict[str, str], ...] = (
    {"key": MODEL_ATTRIBUTE, "value": "model"},
    {"key": "service.name", "value": "service_name"},
)
# Label matchers after $__tags are written first so an empty $__tags still
# leaves valid PromQL (a trailing comma in a matcher list is allowed).
TRACE_METRIC_QUERIES: tuple[dict[str, str], ...] = (
    {"name": "Latency p95 of this model (ms)",
     "query": "histogram_quantile(0.95, sum by (le) "
              "(rate(llm_latency_ms_total_bucket{$__tags}[5m])))"},
    {"name": "TTFT p95 of this model (ms)",
     "query": "histogram_quantile(0.95, sum by (le) "
              "(rate(llm_latency_ms_ttft_bucket{$__tags}[5m])))"},
    {"name": "Error share of this model (%)",
     "query": '100 * (sum(rate(llm_spans_total{status="error", $__tags}[5m])) or vector(0))'
              " / sum(rate(llm_spans_total{$__tags}[5m]))"},
    {"name": "Cumulative cost of this model (USD)",
     "query": "sum(llm_cost_usd_micro_total{$__tags}) / 1e6"},
)


def explore_traces_url(tempo_uid: str, traceql: str) -> str:
    """Explore URL running ``traceql`` on Tempo over the panel's time range.

    ``traceql`` may contain Grafana variables (``${__field.labels.model}``); they
    are kept unencoded so Grafana interpolates them.
    """
    variables: dict[str, str] = {}

    def keep(text: str) -> str:
        # swap each ${...} for an inert token that survives percent-encoding
        out, i = [], 0
        while (start := text.find("${", i)) >= 0:
            end = text.index("}", start)
            token = f"GRAFANAVAR{len(variables)}X"
            variables[token] = text[start:end + 1]
            out.append(text[i:start] + token)
            i = end + 1
        out.append(text[i:])
        return "".join(out)

    pane = {
        "datasource": tempo_uid,
        "queries": [{
            "refId": "A",
            "datasource": {"type": "tempo", "uid": tempo_uid},
            "queryType": "traceql",
            "query": keep(traceql),
            "limit": 20,
            "tableType": "traces",
        }],
        "range": {"from": keep("${__from}"), "to": keep("${__to}")},
    }
    encoded = quote(json.dumps({"traces": pane}, separators=(",", ":")), safe="")
    for token, variable in variables.items():
        encoded = encoded.replace(token, variable)
    return f"/explore?schemaVersion=1&orgId=1&panes={encoded}"


def slow_spans_traceql(model_variable: str = "${__field.labels.model:percentencode}") -> str:
    """TraceQL: spans of the clicked series' model at least as slow as the clicked value (ms)."""
    return (f'{{ span.{MODEL_ATTRIBUTE} = "{model_variable}" '
            f"&& duration >= ${{__value.raw}}ms }}")
