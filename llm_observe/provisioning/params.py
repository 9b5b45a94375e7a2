"""RenderParams: every port, host, path and interval the templates use, in one frozen record.

Two profiles share the same templates:

- ``native``: everything on 127.0.0.1, state under the output directory — what
  ``llm-observe serve --with-prometheus`` and the tests use.
- ``container``: the all-in-one image (docker/): the published services listen
  on 0.0.0.0, the internal ones (Tempo, Loki, Alloy) on loopback, state under
  /var/lib/llm-observe so one named volume keeps it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_observe.errors import ConfigError
from llm_observe.provisioning.alerts import AlertParams

PROFILES = ("native", "container")
TARGET = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$")
_DURATION = re.compile(r"^[1-9][0-9]*(ms|s|m|h)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}

# Datasource UIDs are fixed so the dashboards can reference them by UID.
PROMETHEUS_UID = "prometheus"
TEMPO_UID = "tempo"
LOKI_UID = "loki"
LOG_JOB = "llm-observe"  # the Loki stream label of the collector's log lines
FOLDER = "LLM Observability"


@dataclass(frozen=True, slots=True)
class RenderParams:
    """Inputs of every template; ``validate()`` names the first bad field."""

    profile: str = "native"
    # the collector (llm-observe serve)
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    metrics_host: str = "127.0.0.1"  # where Prometheus scrapes /metrics
    metrics_port: int = 9464
    # more collectors (replicas, workers' hosts) scraped by the same job: "host:port" each
    extra_scrape_targets: tuple[str, ...] = ()
    # a file holding LLM_OBSERVE_METRICS_TOKEN, when /metrics wants one (render writes it)
    metrics_token_file: str | None = None
    otlp_port: int = 4317
    otlp_http_port: int = 4318  # OTLP/HTTP (POST /v1/traces)
    # spec 6.1 / 8: metrics are pulled every 5 s
    scrape_interval: str = "5s"
    # Prometheus (the metrics collector UI)
    prometheus_host: str = "127.0.0.1"
    prometheus_port: int = 9090
    # Tempo: OTLP gRPC in on an internal port; only the collector forwards to it
    tempo_otlp_port: int = 4319
    tempo_http_port: int = 3200
    tempo_grpc_port: int = 9095
    trace_retention: str = "168h"
    # Loki (logs) and Alloy (tails the collector's log file into Loki)
    loki_port: int = 3100
    loki_grpc_port: int = 9097
    alloy_port: int = 12345
    log_retention: str = "168h"
    # Grafana
    grafana_host: str = "127.0.0.1"
    grafana_port: int = 3000
    # spec 8: dashboard JSON hot-reload interval
    dashboard_reload_seconds: int = 30
    # spec 8: a span is visible after 5-10 s; the dashboards refresh at this pace
    dashboard_refresh: str = "10s"
    # state and logs (None = under the output directory)
    data_dir: str | None = None
    log_dir: str | None = None
    # thresholds and for: durations of prometheus/alerts.yml
    alerts: AlertParams = field(default_factory=AlertParams)

    @classmethod
    def for_profile(cls, profile: str, **overrides: Any) -> RenderParams:
        """Defaults of a profile, then the non-None ``overrides``."""
        base = cls()
        if profile == "container":
            base = dataclasses.replace(
                base, profile="container", api_host="0.0.0.0", prometheus_host="0.0.0.0",
                grafana_host="0.0.0.0", data_dir="/var/lib/llm-observe",
                log_dir="/var/log/llm-observe")
        elif profile != "native":
            raise ConfigError("render", "profile", f"must be one of {PROFILES}, got {profile!r}")
        values = {k: v for k, v in overrides.items() if v is not None}
        return dataclasses.replace(base, **values).validate()

    def validate(self) -> RenderParams:
        """Return self, or raise ConfigError naming the first bad field."""
        _check(self.profile in PROFILES, "profile", f"must be one of {PROFILES}")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_port"):
                _check(isinstance(value, int) and 1 <= value <= 65535, f.name,
                       "must be a port 1-65535")
        for name in ("scrape_interval", "trace_retention", "log_retention", "dashboard_refresh"):
            _check(bool(_DURATION.match(getattr(self, name))), name,
                   "must be a duration like 5s, 500ms, 1m or 168h")
        _check(self.dashboard_reload_seconds >= 1, "dashboard_reload_seconds", "must be >= 1")
        for target in self.extra_scrape_targets:
            _check(bool(TARGET.match(target)), "extra_scrape_targets",
                   f"{target!r} is not host:port")
        self.alerts.validate()
        return self

    def scrape_timeout(self) -> str:
        """Prometheus refuses a scrape timeout above the interval; cap the 10 s default."""
        return self.scrape_interval if duration_seconds(self.scrape_interval) < 10 else "10s"

    def paths(self, out_dir: Path) -> dict[str, str]:
        """Absolute directories the configs point at (state, logs, rendered files)."""
        out = out_dir.resolve()
        data = Path(self.data_dir) if self.data_dir else out / "data"
        logs = Path(self.log_dir) if self.log_dir else out / "logs"
        return {
            "out_dir": str(out),
            "data_dir": str(data),
            "log_dir": str(logs),
            "dashboards_dir": str(out / "grafana" / "dashboards"),
            "grafana_provisioning_dir": str(out / "grafana" / "provisioning"),
            "grafana_data_dir": str(data / "grafana"),
            "admin_password_file": str(data / "grafana" / "admin-password"),
            "tempo_dir": str(data / "tempo"),
            "loki_dir": str(data / "loki"),
            "alloy_dir": str(data / "alloy"),
            "collector_log": str(logs / "collector.log"),
        }


def duration_seconds(value: str) -> float:
    """Seconds in a Prometheus-style duration (``5s``, ``500ms``, ``1m``)."""
    m = _DURATION.match(value)
    if m is None:
        raise ValueError(f"not a duration: {value!r}")
    unit = m.group(1)
    return int(value[: -len(unit)]) * _UNIT_SECONDS[unit]


def _check(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise ConfigError("render", name, message)
