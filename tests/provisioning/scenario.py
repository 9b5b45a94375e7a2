"""The dashboard tests' span mix, the evaluated scenario, and helpers to compare results.

Shared by test_dashboard_queries.py and genai_alert_checks.py (see the former's docstring
for why every series' increase scales by one factor ``f``).
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import httpx
import pytest


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
    f: float  # the mean extrapolation factor of rate()/increase() over all spans
    costs: list[int]  # cost_usd_micro of each MIX span as recorded
    dashboards: dict[str, dict[str, Any]]
    # each MIX span's own factor: that of the replica (scrape target) it was recorded on.
    # One target scales every series alike; N targets, scraped at their own offsets, each
    # scale theirs by their own factor, so an expected rate weighs each span by its own.
    factors: dict[int, float] = dataclasses.field(default_factory=dict)

    def w(self, span: dict[str, Any]) -> float:
        """The extrapolation factor that applies to ``span``'s samples."""
        return self.factors.get(id(span), self.f)

    def total(self, spans: list[dict[str, Any]], field: str | None = None) -> float:
        """Σ factor × (1, or the span's ``field``): what increase() reports for them."""
        return sum(self.w(x) * (x[field] if field else 1) for x in spans)

    def quantile(self, q: float, spans: list[dict[str, Any]], field: str,
                 bounds: tuple[float, ...], scale: float = 1.0) -> float:
        """histogram_quantile of these spans' ``field`` (÷ ``scale``) as Prometheus sees it."""
        return quantile(q, [x[field] / scale for x in spans], bounds, [self.w(x) for x in spans])

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


def wait_for(client: httpx.Client, expr: str, value: float, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    seen: Any = None
    while time.monotonic() < deadline:
        result = client.get("/api/v1/query", params={"query": expr}).json()["data"]["result"]
        seen = result[0]["value"][1] if result else None
        if seen is not None and float(seen) == value:
            return
        time.sleep(0.2)
    raise AssertionError(f"{expr} never reached {value} (last {seen})")


# ---------------------------------------------------------------- expectations


def quantile(q: float, values: list[float], bounds: tuple[float, ...],
             weights: list[float] | None = None) -> float:
    """Prometheus' histogram_quantile on the buckets these values fall in (linear in a
    bucket); each value counts ``weights[i]`` (default 1)."""
    ws = weights or [1.0] * len(values)
    counts = [sum(w for v, w in zip(values, ws, strict=True) if v <= b) for b in bounds]
    rank = q * sum(ws)
    eps = 1e-9 * sum(ws)  # weighted sums round: a rank on a bucket's edge stays in it
    for i, cum in enumerate(counts):
        if cum >= rank - eps:
            below = counts[i - 1] if i else 0
            start = bounds[i - 1] if i else 0.0
            return start + (bounds[i] - start) * (rank - below) / (cum - below)
    return float(bounds[-1])


def group_by(key: str) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in MIX:
        groups[span[key]].append(span)
    return groups


def one_label(result: dict[tuple[tuple[str, str], ...], float], label: str) -> dict[str, float]:
    return {dict(k)[label]: v for k, v in result.items()}


def close_to(actual: dict[str, float], expected: dict[str, float], rel: float = 1e-6) -> None:
    assert set(actual) == set(expected), (actual, expected)
    for k, v in expected.items():
        assert actual[k] == pytest.approx(v, rel=rel, abs=1e-9), (k, actual, expected)


Results = dict[str, dict[tuple[tuple[str, str], ...], float]]  # refId -> series -> value
