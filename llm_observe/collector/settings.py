"""Collector settings: one frozen dataclass, from defaults < environment < command line.

Every field ``name`` can be set with the environment variable
``LLM_OBSERVE_<NAME>`` (e.g. ``LLM_OBSERVE_METRICS_PORT=9464``) and, for the
options ``serve`` exposes, on the command line. ``validate()`` names the bad
field in a one-line error.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from llm_observe.errors import ConfigError

ENV_PREFIX = "LLM_OBSERVE_"
MiB = 1024 * 1024
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
# The API's offloaded CPU work (api/offload.py), per kind: threads running it, requests queued
OFFLOAD_BOUNDS = tuple(f"api_{kind}_{side}" for kind in ("scan", "embed", "body")
                       for side in ("running", "waiting"))


@dataclass(frozen=True, slots=True)
class Settings:
    # network
    host: str = "127.0.0.1"
    port: int = 8000
    metrics_host: str | None = None  # None = same as host
    metrics_port: int = 9464
    otlp_host: str | None = None  # None = same as host
    otlp_port: int = 4317  # 0 disables the OTLP/gRPC receiver
    otlp_http_host: str | None = None  # None = same as otlp_host, else host
    otlp_http_port: int = 4318  # 0 disables the OTLP/HTTP receiver
    metrics_init: bool = True
    # configuration files (None = the packaged defaults, or config_dir's files)
    config_dir: str | None = None
    prices_file: str | None = None
    patterns_file: str | None = None
    # authentication: a bearer token per door, off (None) by default natively
    api_token: str | None = None  # the REST API
    otlp_token: str | None = None  # OTLP (gRPC metadata / HTTP header ``authorization``)
    metrics_token: str | None = None  # GET /metrics (Prometheus ``authorization`` config)
    # REST API
    max_body_bytes: int = 1 * MiB
    max_batch_spans: int = 1000
    # CPU work offloaded to threads (api/offload.py): past running + waiting, or after
    # waiting api_offload_wait_s, a request is answered 503 busy with Retry-After
    api_scan_running: int = CORES
    api_scan_waiting: int = 4 * CORES
    api_embed_running: int = CORES
    api_embed_waiting: int = 4 * CORES
    api_body_running: int = CORES
    api_body_waiting: int = 16 * CORES  # a body's work takes milliseconds: a deeper queue
    api_offload_wait_s: float = 5.0
    redis_url: str | None = None  # events; and shared state (redis_state) across workers/replicas
    redis_state: bool = True  # with redis_url: tool-call chain state lives in Redis
    # OTLP receiver and forwarder
    otlp_max_message_bytes: int = 16 * MiB
    otlp_max_spans_per_request: int = 20_000  # SDKs send 512, the OTel Collector <= 8,192
    # OTLP/HTTP slow and heavy clients (receiver/http_guard.py): a connection's first
    # request headers within this of connecting; a body within this of its headers; body
    # bytes held across connections (past it: 503 + Retry-After)
    otlp_http_header_timeout_s: float = 20.0
    otlp_http_body_timeout_s: float = 60.0
    otlp_http_inflight_max_bytes: int = 64 * MiB
    tempo_endpoint: str | None = None  # e.g. localhost:4319; None = metrics only
    queue_max_spans: int = 100_000
    queue_max_bytes: int = 256 * MiB
    spool_dir: str | None = None
    # write-ahead: a span is on disk (spool_dir) before its request is answered OK
    write_ahead: bool = False
    shutdown_timeout_s: float = 10.0
    redact_pii: bool = True
    # embeddings
    embedding_enabled: bool = True
    embedding_threads: int = 0
    embedding_batch_size: int = 32
    embedding_quantized: bool = False
    embedding_queue_max: int = 256  # prompts waiting for an embedding; over it spans go on without
    embedding_max_per_s: float = 50.0  # embeddings per second, sustained (token bucket)
    # test-call targets (the provider SDKs' own env vars are honoured too)
    openai_base_url: str | None = None
    anthropic_base_url: str | None = None
    openai_api_key: str | None = None
    anthropic_api_key: str | None = None
    # metric label caps: distinct values per label, and label sets per metric family
    max_models: int = 500
    max_services: int = 500
    max_label_sets: int = 10_000
    # sample lines one /metrics scrape may hold over every metric object (docs/metrics.md)
    max_scrape_series: int = 500_000
    # the OTel GenAI client histograms (gen_ai_client_*) beside the llm_* series
    genai_metrics: bool = True
    # trace exemplars on the latency, TTFT, cost and token series (OpenMetrics scrapes only)
    exemplars: bool = True
    # text bounds: characters of one prompt/completion that are token-counted exactly
    # and scanned; past them the count is extrapolated (heuristic) and the span says so
    max_text_chars: int = 100_000

    def validate(self) -> Settings:
        """Return self, or raise ConfigError naming the first bad field."""
        for name in ("port", "metrics_port"):
            _check(1 <= getattr(self, name) <= 65535, name, "must be a port 1-65535")
        for name in ("otlp_port", "otlp_http_port"):
            _check(0 <= getattr(self, name) <= 65535, name, "must be a port 0-65535 (0 = off)")
        for name in ("max_body_bytes", "max_batch_spans", "otlp_max_message_bytes",
                     "otlp_max_spans_per_request",
                     "queue_max_spans", "queue_max_bytes", "embedding_batch_size",
                     "max_models", "max_services", "max_label_sets", "max_scrape_series",
                     "max_text_chars",
                     "embedding_queue_max", "otlp_http_inflight_max_bytes"):
            _check(getattr(self, name) >= 1, name, "must be >= 1")
        for name in OFFLOAD_BOUNDS:
            value = getattr(self, name)
            _check(type(value) is int and value >= 1, name, "must be an integer >= 1")
        _check(self.api_offload_wait_s > 0, "api_offload_wait_s", "must be > 0 (seconds)")
        _check(self.embedding_threads >= 0, "embedding_threads", "must be >= 0")
        _check(self.shutdown_timeout_s >= 0, "shutdown_timeout_s", "must be >= 0")
        for name in ("otlp_http_header_timeout_s", "otlp_http_body_timeout_s"):
            _check(getattr(self, name) > 0, name, "must be > 0 (seconds)")
        _check(self.embedding_max_per_s > 0, "embedding_max_per_s", "must be > 0")
        _check(not self.write_ahead or bool(self.spool_dir), "write_ahead",
               "needs spool_dir (the directory spans are written to before the answer)")
        for name in ("api_token", "otlp_token", "metrics_token"):
            token = getattr(self, name)
            _check(token is None or (token.strip() == token and token.isprintable()
                                     and token.isascii() and bool(token)), name,
                   "must be printable ASCII without surrounding spaces")
        _check(bool(self.host and self.host.strip()), "host",
               "must not be empty (use 0.0.0.0 to listen on every interface)")
        if self.redis_url is not None:
            _check(self.redis_url.startswith(("redis://", "rediss://", "unix://")), "redis_url",
                   f"must start with redis://, rediss:// or unix://, got {self.redis_url!r}")
        if self.config_dir is not None:
            _check(Path(self.config_dir).is_dir(), "config_dir",
                   f"{self.config_dir!r} is not a directory")
        return self

    def config_file(self, name: str) -> str | None:
        """Path of a config file (``model_prices.yaml``...) honouring the overrides."""
        explicit = {"model_prices.yaml": self.prices_file,
                    "patterns.yaml": self.patterns_file}.get(name)
        if explicit:
            return explicit
        if self.config_dir is not None:
            return str(Path(self.config_dir) / name)
        return None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None,
                 **overrides: Any) -> Settings:
        """Defaults, then ``LLM_OBSERVE_*`` variables, then non-None ``overrides``."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is not None and raw.strip():  # set but empty = unset
                values[f.name] = _parse(f.name, str(f.type), raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return dataclasses.replace(cls(), **values).validate()


def _check(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise ConfigError("settings", name, message)


def _parse(name: str, type_name: str, raw: str) -> Any:
    """Convert one environment value by the field's annotated type."""
    env_name = ENV_PREFIX + name.upper()
    if type_name.startswith("bool"):
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ConfigError("environment", env_name, f"must be true or false, got {raw!r}")
    if type_name.startswith(("int", "float")):
        try:
            return int(raw) if type_name.startswith("int") else float(raw)
        except ValueError:
            kind = "a whole number" if type_name.startswith("int") else "a number"
            raise ConfigError("environment", env_name, f"must be {kind}, got {raw!r}") from None
    return raw or None
