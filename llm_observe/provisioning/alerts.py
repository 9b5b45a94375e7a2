"""AlertParams: the thresholds and ``for:`` durations of the rendered Prometheus alert rules.

The rules themselves are ``templates/prometheus/alerts.yml.j2`` (one group per dashboard
plus the collector's health); this module holds only their parameters, so a team tunes
them without touching PromQL: ``llm-observe render --alerts FILE`` and ``serve
--with-prometheus`` (``CONFIG_DIR/alerts.yaml`` when present) read a YAML mapping of
field → value; unknown fields and bad values stop with one line naming the file and entry.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_observe.errors import ConfigError

# Prometheus durations as rules accept them (0s = fire at the first evaluation)
_FOR = re.compile(r"^(0|[1-9][0-9]*)(ms|s|m|h|d)$")
_SERVICE = re.compile(r"^[^\"\\\n]{1,200}$")  # spliced into a PromQL string literal
_URL = re.compile(r"^https?://[^\s\"\\]+$")
ALERTS_FILE = "alerts.yaml"  # the optional file in serve's --config-dir


@dataclass(frozen=True, slots=True)
class AlertParams:
    """Every knob of the rules; the defaults suit a production app with real traffic."""

    # spend: USD per hour per service over the last ``spend_window``
    spend_budget_usd_per_hour: float = 50.0
    # per-service budgets overriding the default (service_name -> USD/h)
    spend_budgets: dict[str, float] = field(default_factory=dict)
    spend_window: str = "1h"
    spend_for: str = "15m"
    # spike: this hour's spend rate over the same hour yesterday, above a floor
    spend_spike_factor: float = 3.0
    spend_spike_min_usd_per_hour: float = 5.0
    spend_spike_for: str = "30m"
    # quality per model (over ``rate_window``, only with at least ``min_calls`` calls)
    rate_window: str = "5m"
    min_calls: int = 20
    error_ratio: float = 0.05
    error_for: str = "10m"
    retry_ratio: float = 0.10
    retry_for: str = "15m"
    latency_p95_ms: float = 30_000.0
    latency_for: str = "15m"
    ttft_p95_ms: float = 5_000.0
    ttft_for: str = "15m"
    # security: flagged spans per service within ``burst_window``
    burst_window: str = "5m"
    injection_burst: int = 5
    injection_for: str = "0s"
    pii_burst: int = 20
    pii_for: str = "0s"
    # agents: error share of a tool's calls / of an MCP method's client calls (over
    # ``rate_window``, only with at least ``min_calls`` calls)
    tool_error_ratio: float = 0.10
    tool_error_for: str = "10m"
    mcp_error_ratio: float = 0.05
    mcp_error_for: str = "10m"
    # agents: p95 of one run's cost per agent over ``agent_run_cost_window`` (runs are
    # rarer than calls: their own window and minimum)
    agent_run_cost_p95_usd: float = 1.0
    agent_run_cost_window: str = "30m"
    agent_min_runs: int = 5
    agent_run_cost_for: str = "15m"
    # a model without a price showed up within ``unpriced_window``
    unpriced_window: str = "15m"
    unpriced_for: str = "0s"
    # the collector itself (scrape job name as rendered in prometheus.yml)
    job: str = "llm-observe"
    down_for: str = "2m"
    absent_for: str = "5m"
    backpressure_for: str = "5m"
    drops_window: str = "10m"
    drops_for: str = "0s"
    spool_bytes: int = 64 * 1024 * 1024
    spool_for: str = "15m"
    embedding_skip_ratio: float = 0.5
    embedding_for: str = "15m"
    label_overflow_for: str = "0s"
    # where your copy of docs/ is served (adds runbook_url annotations); "" = none
    runbook_base_url: str = ""

    def validate(self) -> AlertParams:
        """Return self, or raise ConfigError naming the first bad field."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name.endswith(("_for", "_window")):
                _check(isinstance(value, str) and bool(_FOR.match(value)), f.name,
                       "must be a Prometheus duration like 0s, 30s, 5m or 1h")
                _check(not f.name.endswith("_window") or not value.startswith("0"), f.name,
                       "a window must be longer than 0")
            elif f.name == "spend_budgets":
                _check(isinstance(value, dict), f.name, "must map service names to USD/h")
                for service, budget in value.items():
                    _check(isinstance(service, str) and bool(_SERVICE.match(service)),
                           f"{f.name}.{service}", "service name: 1-200 chars, no \" or \\")
                    _check(_positive(budget), f"{f.name}.{service}",
                           "must be a finite number > 0")
            elif f.name == "runbook_base_url":
                _check(isinstance(value, str) and (value == "" or bool(_URL.match(value))),
                       f.name, "must be empty or an http(s) URL without quotes or spaces")
            elif f.name == "job":
                _check(isinstance(value, str) and bool(_SERVICE.match(value)), f.name,
                       "must be a scrape job name")
            elif f.name.endswith("_ratio"):
                _check(_positive(value) and value < 1, f.name, "must be a number in (0, 1)")
            else:
                zero = f.name in _MAY_BE_ZERO
                _check(_positive(value) or (zero and value == 0 and not isinstance(value, bool)),
                       f.name, f"must be a finite number {'>=' if zero else '>'} 0")
        return self

    @classmethod
    def from_mapping(cls, data: Any, source: str) -> AlertParams:
        """Defaults overridden by ``data`` (a YAML mapping); ConfigError names ``source``."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ConfigError(source, "alerts", "must be a mapping of field: value")
        known = {f.name: f for f in dataclasses.fields(cls)}
        for key, value in data.items():
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"did you mean {close[0]!r}?" if close else "see docs/alerts.md"
                raise ConfigError(source, str(key), f"unknown alert parameter; {hint}")
            if isinstance(value, bool):
                raise ConfigError(source, key, "true/false is not a value of any alert parameter")
        try:
            return cls(**data).validate()
        except ConfigError as exc:
            raise ConfigError(source, exc.entry, exc.message) from None


_MAY_BE_ZERO = frozenset({"injection_burst", "pii_burst", "min_calls"})


def load_alert_params(path: Path | str | None) -> AlertParams:
    """AlertParams from a YAML file (None: the defaults)."""
    if path is None:
        return AlertParams()
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(str(path), "alerts", f"cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "file"
        raise ConfigError(str(path), where, "not valid YAML") from None
    return AlertParams.from_mapping(data, str(path))


def alerts_in_config_dir(path: str | None) -> AlertParams:
    """``serve --with-prometheus``'s thresholds: ``CONFIG_DIR/alerts.yaml`` when it exists."""
    return load_alert_params(path if path is not None and Path(path).exists() else None)


def _positive(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def _check(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise ConfigError("alerts", name, message)
